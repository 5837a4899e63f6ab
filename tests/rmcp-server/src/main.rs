//! The rmcp example server the probe-overhead bench measures: two tools over stdio, in the
//! shape of the SDK's own examples (`#[tool_router(server_handler)]`, `serve(stdio())`).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Clone, Default)]
struct Example;

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[tool_router(server_handler)]
impl Example {
    #[tool(description = "Returns its text argument unchanged")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Adds two numbers and returns their sum")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Example.serve(rmcp::transport::stdio()).await?;
    server.waiting().await?;
    Ok(())
}
