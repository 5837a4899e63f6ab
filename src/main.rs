//! The `mcp-witness` binary: everything is in the library; this only hands over.

fn main() -> std::process::ExitCode {
    mcp_witness::sys::fix_mmap_threshold();
    mcp_witness::cli::main()
}
