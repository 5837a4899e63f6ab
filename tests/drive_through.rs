//! `drive --through CMD`: a real bridge process between drive and a real `mcp-witness serve`,
//! and drive's judgement of what crossed it. The bridges: tests/bridges/stdio_proxy.py
//! (faithful, or lossy on purpose), and two real third-party bridges installed by
//! tests/setup/install-reference-servers: mcp-remote (stdio to HTTP) and supergateway
//! (Streamable HTTP to stdio).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn proxy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bridges/stdio_proxy.py")
}

/// `python3 stdio_proxy.py OPTIONS -- {serve}`.
fn proxy_cmd(options: &str) -> String {
    format!("python3 {} {options} -- {{serve}}", proxy().display())
}

/// Runs `mcp-witness drive ARGS` in `dir`, with `env` added.
fn drive(dir: &TempDir, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(WITNESS);
    cmd.arg("drive")
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(bounded_output(&mut cmd))
}

/// The bridge verdict lines (`### bridge `CMD`: VERDICT`), one per run, in order.
fn verdicts(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("### bridge `"))
        .map(|l| {
            l.rsplit_once("`: ")
                .expect("a verdict after the command")
                .1
                .to_string()
        })
        .collect()
}

#[test]
fn a_faithful_proxy_forwards_every_domain_in_both_eras() {
    let dir = TempDir::new("through-faithful");
    let cmd = proxy_cmd("");
    let run = drive(
        &dir,
        &["--domain", "all", "--era", "both", "--through", &cmd],
        &[],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("drive: PASS"), "{}", run.stdout);
    assert_eq!(verdicts(&run.stdout), vec!["forwards"; 24], "{}", run.stdout);
    for d in EVERY_KIT_DOMAIN {
        assert!(
            run.stdout.contains(&format!("# drive: {d} (legacy era")),
            "{d} was driven: {}",
            run.stdout
        );
    }
    // The things that cross: requests, notifications each way, server requests, answers.
    for crossed in [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
        "notifications/progress ×3",
        "notifications/cancelled",
        "notifications/resources/updated",
        "notifications/message ×8",
        "roots/list result",
        "elicitation/create result",
        "sampling/createMessage result",
    ] {
        assert!(
            run.stdout.contains(crossed),
            "{crossed} crossed intact: {}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("- capabilities: crossed intact both ways"));
    assert!(!run.stdout.contains("[dropped]") && !run.stdout.contains("[altered]"));
}

#[test]
fn a_proxy_that_rewrites_ids_still_forwards_and_the_rewrite_is_named() {
    let dir = TempDir::new("through-ids");
    let cmd = proxy_cmd("--rewrite-ids");
    // progress: its cancel names the call by id, which the proxy must translate.
    let run = drive(
        &dir,
        &["--domain", "progress", "--era", "both", "--through", &cmd],
        &[],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(verdicts(&run.stdout), ["forwards", "forwards"]);
    assert!(
        run.stdout
            .contains(r#"request id(s) (drive's → serve's: 1 → "proxy-1""#),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("a proxy may rewrite ids"));
    assert!(run.stdout.contains("notifications/cancelled"));
}

#[test]
fn a_lossy_proxy_is_named_for_exactly_what_it_dropped_and_altered() {
    let dir = TempDir::new("through-lossy");
    let cmd = proxy_cmd("--drop notifications/tools/list_changed --strip resources.subscribe");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("drive: FAIL"));
    assert_eq!(
        verdicts(&run.stdout),
        ["alters initialize result (serve → drive); drops notifications/tools/list_changed (serve → drive)"],
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "- capabilities altered: initialize result (serve → drive): /result/capabilities/resources/subscribe removed (was true)"
        ),
        "{}",
        run.stdout
    );
    // Each finding cites serve's log line and drive's message.
    let dropped = run
        .stdout
        .lines()
        .find(|l| l.starts_with("- [dropped] notifications/tools/list_changed (serve → drive)"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(dropped.contains("serve log line") && dropped.contains("drive never received it"));
    // drive's own steps agree: the notification never came.
    assert!(
        run.stdout
            .contains("- [FAIL] notifications/tools/list_changed arrives once: 0")
    );
}

#[test]
fn a_proxy_that_holds_a_notification_back_is_named_for_the_delay() {
    let dir = TempDir::new("through-delay");
    let cmd = proxy_cmd("--delay notifications/tools/list_changed=1500");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    // drive's own wait is longer: its steps pass, the bridge does not.
    assert!(
        run.stdout
            .contains("- [ok] notifications/tools/list_changed arrives once: 1")
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        verdicts(&run.stdout),
        ["delays notifications/tools/list_changed (serve → drive)"],
        "{}",
        run.stdout
    );
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("- [delayed] notifications/tools/list_changed (serve → drive) by "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let ms: u64 = line["- [delayed] notifications/tools/list_changed (serve → drive) by ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms >= 1500, "the delay measured is at least the hold: {line}");
}

#[test]
fn a_proxy_that_answers_from_a_stale_cache_is_named_for_answering_itself() {
    let dir = TempDir::new("through-cache");
    let cmd = proxy_cmd("--cache tools/list");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    // The re-list got the first list again: drive sees alpha still there.
    assert!(run.stdout.contains("- [FAIL] re-list has beta, not alpha"));
    assert_eq!(
        verdicts(&run.stdout),
        ["answers itself tools/list (drive → serve)"],
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "- [answered by the bridge itself] tools/list (drive → serve): serve never received it"
        )
    );
}

#[test]
fn a_proxy_that_drops_a_client_notification_is_named_for_it() {
    let dir = TempDir::new("through-lossy-up");
    let cmd = proxy_cmd("--drop notifications/cancelled");
    let run = drive(&dir, &["--domain", "progress", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        verdicts(&run.stdout),
        ["drops notifications/cancelled (drive → serve)"],
        "{}",
        run.stdout
    );
}

#[test]
fn a_quoted_serve_placeholder_reaches_a_bridge_as_one_command_string() {
    let dir = TempDir::new("through-shell");
    let cmd = format!("python3 {} --shell -- '{{serve}}'", proxy().display());
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(verdicts(&run.stdout), ["forwards"]);
    // The command line went as one shell-quoted argument.
    assert!(
        run.stdout.contains(" --shell -- '") && run.stdout.contains(" serve --log "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_bridge_that_writes_noise_is_named_for_it_and_its_text_made_inert() {
    let dir = TempDir::new("through-noise");
    // A raw escape sequence in the bridge's first line: the tap must not echo it.
    let cmd = proxy_cmd("--noise '\u{1b}[31mstarting\u{1b}[0m'");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        verdicts(&run.stdout),
        ["writes 1 non-JSON-RPC line(s) to drive"],
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains('\u{1b}'), "no raw escape reaches the report");
}

#[test]
fn a_bridge_that_will_not_exit_is_killed_with_its_whole_process_tree() {
    let dir = TempDir::new("through-linger");
    let marker = unique_marker("through-linger");
    let (key, value) = marker.split_once('=').unwrap();
    let cmd = proxy_cmd("--linger");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[(key, value)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(verdicts(&run.stdout), ["forwards"]);
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "the bridge and the serve it started are gone"
    );
}

#[test]
fn a_command_without_a_placeholder_or_program_is_a_usage_error() {
    let dir = TempDir::new("through-usage");
    let run = drive(&dir, &["--through", "mcp-proxy --port 8080"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no {serve} or {url} placeholder"),
        "{}",
        run.stderr
    );
    let run = drive(&dir, &["--through", "python3 'proxy.py {serve}"], &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("quote is never closed"), "{}", run.stderr);
    let run = drive(&dir, &["--through", "no-such-bridge-xyz {serve}"], &[]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("`no-such-bridge-xyz` was not found"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "", "nothing was driven");
}

/// A pinned bridge installed by tests/setup/install-reference-servers.
fn installed_bridge(name: &str) -> PathBuf {
    let bridge = reference_dir().join("bridges/node_modules/.bin").join(name);
    assert!(
        bridge.exists(),
        "{name} is not installed at {}: run tests/setup/install-reference-servers",
        bridge.display()
    );
    bridge
}

#[test]
fn mcp_remote_forwards_the_list_changed_cycle_over_serve_http() {
    let bridge = installed_bridge("mcp-remote");
    let dir = TempDir::new("through-mcp-remote");
    let auth = dir.join("mcp-auth");
    let cmd = format!("{} {{url}}", bridge.display());
    let run = drive(
        &dir,
        &["--domain", "tools", "--through", &cmd],
        &[("MCP_REMOTE_CONFIG_DIR", auth.to_str().unwrap())],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(verdicts(&run.stdout), ["forwards"], "{}", run.stdout);
    assert!(run.stdout.contains("bridge started as: ") && run.stdout.contains(" http://127.0.0.1:"));
    // What mcp-remote does on its own, named but not held against it.
    assert!(
        run.stdout.contains(r#"[relabelled (not held against it)] initialize (drive → serve): /params/clientInfo/name changed from "mcp-witness-drive" to "mcp-witness-drive (via mcp-remote 0.15.1)""#),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("held only a handshake, the bridge probing serve")
    );
    assert!(run.stdout.contains("notifications/tools/list_changed"));
    assert!(run.stdout.contains("- capabilities: crossed intact both ways"));
}

#[test]
fn supergateway_is_named_for_the_notifications_it_drops() {
    let bridge = installed_bridge("supergateway");
    let dir = TempDir::new("through-supergateway");
    let cmd = format!("{} --streamableHttp {{url}} --logLevel none", bridge.display());
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    // supergateway 4.0.0 passes requests and their answers on (with ids of its own) but
    // not a notification serve sends in the stream of a call's reply.
    assert_eq!(
        verdicts(&run.stdout),
        ["drops notifications/tools/list_changed (serve → drive)"],
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("- capabilities: crossed intact both ways"));
    assert!(
        run.stdout
            .contains("the bridge rewrote 4 request id(s) (drive's → serve's: 1 → 0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("- [FAIL] notifications/tools/list_changed arrives once: 0")
    );
}

#[test]
fn a_bridge_that_exits_at_once_is_reported_with_its_stderr() {
    let dir = TempDir::new("through-exits");
    let cmd = r#"python3 -c 'import sys; sys.exit("bridge: bad flag")' {serve}"#;
    let run = drive(&dir, &["--domain", "tools", "--through", cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("initialize got no reply: the server exited"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("serve never started"), "{}", run.stdout);
    assert!(
        run.stdout.contains("its stderr ends: bridge: bad flag"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("drive: FAIL"));
}

#[test]
fn over_serve_http_a_run_it_cannot_carry_says_so() {
    let bridge = installed_bridge("mcp-remote");
    let dir = TempDir::new("through-caveat");
    let auth = dir.join("mcp-auth");
    let cmd = format!("{} {{url}}", bridge.display());
    let run = drive(
        &dir,
        &["--domain", "progress", "--through", &cmd],
        &[("MCP_REMOTE_CONFIG_DIR", auth.to_str().unwrap())],
    );
    // Progress in the middle of a call cannot leave serve --http before the call's reply.
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("note: serve --http sends what a call produces only with the call's reply"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_bridge_that_floods_drive_is_named_for_it_not_judged_to_forward() {
    let dir = TempDir::new("through-flood");
    // Far more messages than a run exchanges: past what the tap keeps, so not all compared.
    let run = drive(
        &dir,
        &["--domain", "tools", "--through", &proxy_cmd("--flood 1500")],
        &[],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    // Only the flood is named: what crossed past the keep may look dropped, but was not.
    let v = verdicts(&run.stdout);
    assert_eq!(v.len(), 1, "{}", run.stdout);
    assert!(
        v[0].starts_with("floods the run (") && v[0].ends_with("not compared)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_bridge_that_writes_a_line_longer_than_drive_reads_is_named_for_it() {
    let dir = TempDir::new("through-huge");
    // Past the 64 MiB a line may have: drive skips it, and the verdict says so.
    let run = drive(
        &dir,
        &["--domain", "tools", "--through", &proxy_cmd("--huge 68000000")],
        &[],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        verdicts(&run.stdout),
        ["writes 1 non-JSON-RPC line(s) to drive"],
        "{}",
        run.stdout
    );
}

/// Drives URL elicitation in both eras through a proxy that replaces serve's page URL with
/// `forged(port)`, `port` that of a local service; returns the run and whether drive
/// connected to that service.
fn drive_with_a_forged_page_url(name: &str, forged: impl Fn(u16) -> String) -> (Run, bool) {
    let dir = TempDir::new(name);
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    service.set_nonblocking(true).unwrap();
    let port = service.local_addr().unwrap().port();
    let forged = serde_json::to_string(&forged(port)).unwrap();
    let cmd = proxy_cmd(&format!("--url {}", shell_word(&forged)));
    let run = drive(
        &dir,
        &["--domain", "elicitation-url", "--era", "both", "--through", &cmd],
        &[],
    );
    let connected = !matches!(service.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    (run, connected)
}

#[test]
fn a_page_url_a_bridge_forged_to_smuggle_a_request_is_never_opened() {
    // The forged URL points at a local service, with a second request after a line break.
    let (run, connected) = drive_with_a_forged_page_url("through-forged-url", |port| {
        format!("http://127.0.0.1:{port}/elicitation/ab HTTP/1.1\r\nHost: x\r\n\r\nPOST /admin HTTP/1.1")
    });
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout
            .matches("- [FAIL] the URL is a page on a loopback address")
            .count(),
        2,
        "both eras refuse the forged URL: {}",
        run.stdout
    );
    assert!(!connected, "drive connected to the URL a bridge forged");
    assert!(!run.stdout.contains('\r'), "no raw CR reaches the report");
}

/// A well-formed loopback page URL that serve never sent (another port, the same shape) is
/// not opened either: drive opens only a URL that serve's own log shows serve sent.
#[test]
fn a_well_formed_page_url_serve_never_sent_is_never_opened() {
    let (run, connected) = drive_with_a_forged_page_url("through-other-page", |port| {
        format!("http://127.0.0.1:{port}/elicitation/0123456789abcdef0123456789abcdef")
    });
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    for (line, why) in [
        (
            "- [ok] the URL is a page on a loopback address",
            "the forged URL is well formed",
        ),
        (
            "- [FAIL] the URL is the one serve sent (its log shows it)",
            "both eras refuse a URL serve did not send",
        ),
    ] {
        assert_eq!(run.stdout.matches(line).count(), 2, "{why}: {}", run.stdout);
    }
    assert!(!connected, "drive connected to a URL serve never sent");
}

/// `text` single-quoted for the `--through` command line.
fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[test]
fn an_alteration_whose_new_value_names_client_info_is_still_an_alteration() {
    let dir = TempDir::new("through-fake-relabel");
    // The text of the change mentions /clientInfo; the message changed is a tool's result.
    let cmd = proxy_cmd("--sub 'alpha called=/clientInfo called'");
    let run = drive(&dir, &["--domain", "tools", "--through", &cmd], &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        verdicts(&run.stdout),
        ["alters tools/call result (serve → drive)"],
        "{}",
        run.stdout
    );
}
