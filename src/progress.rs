//! What is running, shown on stderr while a wait is long: `waiting for the initialize reply…
//! 4 s of 10`, rewritten in place once a second and wiped when the wait ends. Shown only
//! when stderr is a terminal and `--quiet` was not given (the CLI turns it on); the text is
//! ours alone (a method name we sent), never the server's.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);
/// A line is on the terminal and must be wiped before anything else is written.
static SHOWN: AtomicBool = AtomicBool::new(false);

/// A wait shorter than this shows nothing.
pub const AFTER: Duration = Duration::from_secs(1);

/// Turns progress lines on or off for this process.
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether progress lines are shown.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Shows (or rewrites) the line for a wait of `waited` out of `bound` for `what`.
pub fn waiting(what: &str, waited: Duration, bound: Duration) {
    if !enabled() {
        return;
    }
    // The bound in tenths of a second, rounded: `10`, `2.5`.
    let tenths = (bound.as_millis() + 50) / 100;
    let bound = if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    };
    let line = format!(
        "\r\x1b[2Kmcp-witness: waiting for the {} reply… {} s of {bound}",
        crate::inert::inert(what),
        waited.as_secs(),
    );
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.flush();
    SHOWN.store(true, Ordering::Relaxed);
}

/// Wipes the line, if one is shown.
pub fn clear() {
    if SHOWN.swap(false, Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(b"\r\x1b[2K");
        let _ = err.flush();
    }
}
