//! `mcp-witness report` shows an auditor a real evidence file as it is: the verification
//! status and trust on top (BROKEN or UNTRUSTED when so), each target by server name and
//! command, the surface changes between blocks naming tool and part, and teardown and timing
//! charts. The HTML page is rendered by headless Chromium (tests/setup/install-chromium) to a
//! screenshot and its DOM read back: server text stays text (no `<script>` of a server's
//! becomes an element) and no control, bidi or invisible character survives raw.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// Runs `mcp-witness ARGS` in the bench, with the fixture's rug pull on or off and `env`.
fn run(b: &Bench, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(WITNESS);
    cmd.args(args)
        .current_dir(b.dir.path())
        .env("MCP_WITNESS_KEY", b.dir.join("signing.key"))
        .env("MCP_WITNESS_DIGEST_CACHE", b.dir.join("digests"))
        .env_remove("MCP_WITNESS_FIXTURE_RUG_PULL")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(bounded_output(&mut cmd))
}

/// One run: the subcommand, the fixture's behaviour and its environment.
type Step<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// An evidence file of five targets: `correct` probed before and after its rug pull and
/// checked twice, `hostile-html` probed twice (the second time with one more tool),
/// `ignore-eof` (ended by SIGTERM) probed once, `mcp-witness serve` probed once, and the
/// client that probe was (a `client` block of `analyze --record`).
fn evidence(label: &str) -> Bench {
    let b = Bench::new(label);
    let ev = b.evidence.to_str().unwrap().to_string();
    let steps: &[Step] = &[
        ("probe", "correct", &[]),
        ("probe", "correct", &[("MCP_WITNESS_FIXTURE_RUG_PULL", "1")]),
        ("check", "correct", &[]),
        ("check", "correct", &[]),
        ("probe", "hostile-html", &[]),
        ("probe", "hostile-html", &[("HOSTILE_VARIANT", "1")]),
        ("probe", "ignore-eof", &[]),
    ];
    for (verb, behaviour, env) in steps {
        let r = run(&b, &[verb, "-q", "-e", &ev, "--", fixture(), behaviour], env);
        assert!(
            r.code == 0 || r.code == 1,
            "{verb} {behaviour}: {}{}",
            r.stdout,
            r.stderr
        );
    }
    // A client block: mcp-witness's own serve, probed, its log analysed and recorded.
    let log = b.dir.join("serve.log.jsonl");
    let log = log.to_str().unwrap();
    let r = run(
        &b,
        &["probe", "-q", "-e", &ev, "--", WITNESS, "serve", "--log", log],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&b, &["analyze", "--record", "-e", &ev, log], &[]);
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(b.blocks().len(), steps.len() + 2);
    assert_eq!(b.last_block()["kind"], "client");
    b
}

/// Chromium, or a failure that says how to install it (never a quiet skip).
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("chromium is not installed: run tests/setup/install-chromium (as root: it installs the Debian package `chromium`)")
        })
}

/// Runs headless Chromium on a local page with its own profile folder.
fn headless(b: &Bench, page: &Path, args: &[&str]) -> Vec<u8> {
    let profile = b.dir.join("chromium-profile");
    let out = bounded_output(
        Command::new(chromium())
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(args)
            .arg(format!("file://{}", page.display()))
            .stdin(Stdio::null()),
    );
    assert!(
        out.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// No raw control character (but line ends and tabs of the page's own markup), DEL, C1,
/// bidi control, zero-width or tag character.
fn assert_no_hazard(label: &str, text: &str) {
    for (i, c) in text.char_indices() {
        let u = c as u32;
        let hazard = (c.is_control() && c != '\n' && c != '\t')
            || (0x200b..=0x200f).contains(&u)
            || (0x202a..=0x202e).contains(&u)
            || (0x2060..=0x2069).contains(&u)
            || u == 0xfeff
            || (0xe0000..=0xe007f).contains(&u);
        assert!(
            !hazard,
            "{label}: raw {c:?} at {i}: {}",
            text[..i]
                .chars()
                .rev()
                .take(80)
                .collect::<String>()
                .chars()
                .rev()
                .collect::<String>()
        );
    }
}

/// The sentence diff gives the rug pull: the tool and each part that changed.
const RUG_PULL: &str = "tool `add`: description, input_schema, annotations changed";

#[test]
fn the_html_report_renders_in_chromium_with_status_targets_surface_changes_and_inert_server_text() {
    let b = evidence("report-html");
    let key = b.public_key();
    let html = b.dir.join("out/report.html");
    let r = run(
        &b,
        &[
            "report",
            "--trust",
            &key,
            "--html",
            html.to_str().unwrap(),
            b.evidence.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("INTACT AND TRUSTED: "), "{}", r.stdout);

    // Self-contained: nothing to fetch, nothing to run.
    let page = std::fs::read_to_string(&html).unwrap();
    for banned in [
        "<script",
        "<link",
        "<iframe",
        "<img",
        "url(",
        "src=\"",
        "href=\"http",
        "@import",
    ] {
        assert!(!page.contains(banned), "the page holds {banned}");
    }
    assert!(
        page.contains("<svg") && page.contains("<polyline"),
        "no chart drawn"
    );
    assert_no_hazard("the HTML file", &page);

    // The screenshot is a real PNG.
    let shot = b.dir.join("report.png");
    headless(
        &b,
        &html,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400",
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert!(png.len() > 1000, "a screenshot of {} bytes", png.len());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");

    // The DOM as Chromium built it.
    let dom = String::from_utf8(headless(&b, &html, &["--dump-dom"])).expect("the DOM is UTF-8");
    let body = dom.split("<body>").nth(1).expect("a body");
    let first_text = body.split("<h1>").nth(1).expect("a heading on top");
    assert!(
        first_text.starts_with("INTACT AND TRUSTED: "),
        "the status is not on top: {}",
        &first_text[..first_text.len().min(200)]
    );
    assert!(
        dom.contains("<title>mcp-witness report: "),
        "the title was changed"
    );
    for target in [
        "mcp-witness-fixture 0.1.0: ",
        " correct",
        " hostile-html",
        " ignore-eof",
        "mcp-witness-serve 0.1.0: ",
        " serve --log ",
    ] {
        assert!(dom.contains(target), "target {target:?} missing");
    }
    assert!(
        dom.contains("Outcomes: client "),
        "the client block's verdict is not counted"
    );
    for id in b
        .blocks()
        .iter()
        .map(|v| v["target"]["id"].as_str().unwrap()[..12].to_string())
    {
        assert!(
            dom.contains(&format!("id=\"t-{id}\"")),
            "no section for target {id}"
        );
    }
    assert!(
        dom.contains(RUG_PULL),
        "the rug pull is not named by tool and part"
    );
    assert!(dom.contains("Adds two numbers and returns their sum. &lt;IMPORTANT&gt;"));
    assert!(
        dom.contains("sigterm") && dom.contains("stdin_eof"),
        "teardown legend missing"
    );
    // The server's markup is text: shown escaped, never an element.
    assert!(
        dom.contains("&lt;script&gt;document.title="),
        "the server's text is not shown"
    );
    for element in ["<script", "<img", "<h1>forged", "</table><h1>"] {
        assert!(!dom.contains(element), "server markup became {element}");
    }
    assert!(
        dom.contains("\\u{1b}[31mred") && dom.contains("\\u{202e}rtl"),
        "hazards not shown escaped"
    );
    assert_no_hazard("the DOM", &dom);
}

#[test]
fn a_tampered_or_untrusted_files_report_says_so_at_the_top_and_exits_1() {
    let b = Bench::new("report-tampered");
    let ev = b.evidence.to_str().unwrap().to_string();
    for _ in 0..3 {
        let r = run(&b, &["probe", "-q", "-e", &ev, "--", fixture(), "correct"], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let key = b.public_key();
    // Someone turns seq 2's pass into a fail; the line stays canonical JSON.
    let text = std::fs::read_to_string(&b.evidence).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(lines[1].contains("\"verdict\":\"pass\""));
    lines[1] = lines[1].replace("\"verdict\":\"pass\"", "\"verdict\":\"fail\"");
    std::fs::write(&b.evidence, lines.join("\n") + "\n").unwrap();

    let html = b.dir.join("t.html");
    let md = b.dir.join("t.md");
    let (html_s, md_s) = (html.to_str().unwrap(), md.to_str().unwrap());
    let r = run(
        &b,
        &[
            "report",
            "--trust",
            &key,
            "--html",
            html_s,
            "--markdown",
            md_s,
            &ev,
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("BROKEN: "), "{}", r.stdout);
    assert!(
        r.stdout.contains("line 2 (seq 2): digest_mismatch"),
        "{}",
        r.stdout
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let top = page.split("<body>").nth(1).unwrap();
    assert!(
        top.starts_with("\n<header id=\"status\" class=\"status broken\"><h1>BROKEN: "),
        "{}",
        &top[..top.len().min(300)]
    );
    assert!(
        top.contains("Shown below: only the 1 verified block before it."),
        "{top}"
    );
    // Nothing past the break is shown as if it were evidence.
    assert!(top.contains("<td>1</td>") && !top.contains("<td>2</td>") && !top.contains("<td>3</td>"));
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.starts_with("# BROKEN: "), "{markdown}");
    let summary = run(&b, &["report", &ev], &[]);
    assert_eq!(summary.code, 1);
    assert!(summary.stdout.starts_with("BROKEN: "), "{}", summary.stdout);

    // An intact file signed by a key the auditor does not trust.
    let u = Bench::new("report-untrusted");
    let uev = u.evidence.to_str().unwrap().to_string();
    let r = run(&u, &["probe", "-q", "-e", &uev, "--", fixture(), "correct"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let other = run(
        &u,
        &["keygen", "--key", u.dir.join("other.key").to_str().unwrap()],
        &[],
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    let other_key = other
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("ed25519:"))
        .expect("keygen prints the public key")
        .to_string();
    let page = u.dir.join("u.html");
    let r = run(
        &u,
        &[
            "report",
            "--trust",
            &other_key,
            "--html",
            page.to_str().unwrap(),
            &uev,
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("UNTRUSTED: "), "{}", r.stdout);
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("<header id=\"status\" class=\"status untrusted\"><h1>UNTRUSTED: "));
    assert!(page.contains("untrusted_key"));
    // Intact without --trust: exit 0, and the page says the signer is not pinned.
    let r = run(&u, &["report", &uev], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with("INTACT (signatures self-consistent, signer not pinned): ")
    );
}

#[test]
fn the_markdown_report_holds_the_same_facts_as_the_page() {
    let b = evidence("report-md");
    let key = b.public_key();
    let md = b.dir.join("report.md");
    let r = run(
        &b,
        &[
            "report",
            "--trust",
            &key,
            "--markdown",
            md.to_str().unwrap(),
            b.evidence.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("# INTACT AND TRUSTED: "), "{text}");
    assert!(text.contains("9 blocks verified, head seq 9 "), "{text}");
    for target in [
        "mcp-witness-fixture 0.1.0: ",
        " correct",
        " hostile-html",
        " ignore-eof",
        "mcp-witness-serve 0.1.0: ",
    ] {
        assert!(text.contains(target), "target {target:?} missing: {text}");
    }
    assert_eq!(text.matches("\n## ").count(), 5, "one section per target: {text}");
    assert!(text.contains("Outcomes: client "), "{text}");
    assert!(
        text.contains("tool \\`add\\`: description, input_schema, annotations changed"),
        "{text}"
    );
    // (check's own grading of a shutdown may warn on a loaded machine; the tally says which.)
    assert!(text.contains("Outcomes: probe pass: 2, check "), "{text}");
    assert!(text.contains("- teardown after_ms: min "), "{text}");
    assert!(text.contains("sigterm 1"), "{text}");
    assert!(text.contains("- run time ms: min "), "{text}");
    assert!(
        text.contains("| 7 | ") && text.contains("| 9 | "),
        "the timeline's rows: {text}"
    );
    assert!(
        text.contains("&lt;script&gt;") && !text.contains("<script"),
        "{text}"
    );
    assert_no_hazard("the Markdown", &text);
    // The text summary on stdout: the same status, targets and change, inert.
    let summary = run(
        &b,
        &["report", "--trust", &key, b.evidence.to_str().unwrap()],
        &[],
    );
    assert_eq!(summary.code, 0, "{}", summary.stderr);
    assert!(
        summary.stdout.starts_with("INTACT AND TRUSTED: "),
        "{}",
        summary.stdout
    );
    assert!(summary.stdout.contains(RUG_PULL), "{}", summary.stdout);
    assert_eq!(
        summary.stdout.matches("\ntarget ").count(),
        5,
        "{}",
        summary.stdout
    );
    assert_no_hazard("the text summary", &summary.stdout);
    // Every table row is one line: server text cannot break out of its cell.
    for line in text.lines().filter(|l| l.starts_with("| ")) {
        assert_eq!(line.matches(" | ").count(), 4, "{line}");
    }
}

#[test]
fn an_unreadable_file_a_malformed_key_an_unwritable_output_or_the_evidence_file_as_output_is_exit_2() {
    let b = Bench::new("report-usage");
    let missing = b.dir.join("missing.jsonl");
    let r = run(&b, &["report", missing.to_str().unwrap()], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let ev = b.evidence.to_str().unwrap().to_string();
    let p = run(&b, &["probe", "-q", "-e", &ev, "--", fixture(), "correct"], &[]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let r = run(&b, &["report", "--trust", "ed25519:00", &ev], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let folder = b.dir.join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let r = run(&b, &["report", "--html", folder.to_str().unwrap(), &ev], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    // The evidence file itself is never overwritten by its report.
    let before = std::fs::read(&b.evidence).unwrap();
    let link = b.dir.join("link.html");
    std::os::unix::fs::symlink(&b.evidence, &link).unwrap();
    for out in [ev.as_str(), link.to_str().unwrap()] {
        let r = run(&b, &["report", "--html", out, &ev], &[]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("is the evidence file itself"), "{}", r.stderr);
    }
    assert_eq!(std::fs::read(&b.evidence).unwrap(), before);
}

/// Appends `n` copies of `template` (a real block of the file) to the file, each re-sealed
/// with the bench's key at the end of the chain; `vary(i, body)` edits each copy first.
fn reseal(b: &Bench, template: &serde_json::Value, n: u64, vary: impl Fn(u64, &mut serde_json::Value)) {
    use mcp_witness::evidence::block::{Link, seal};
    use mcp_witness::evidence::kind::BlockKind;
    let key = mcp_witness::evidence::keys::load(&b.dir.join("signing.key")).unwrap();
    let mut blocks = b.blocks();
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&b.evidence)
        .unwrap();
    for i in 0..n {
        let last = blocks.last().unwrap().clone();
        let mut body = template.clone();
        vary(i, &mut body);
        let seq = last["seq"].as_u64().unwrap() + 1;
        // A later second each block: no two blocks of a target share a moment.
        body["observed_at"] = format!(
            "2027-01-01T{:02}:{:02}:{:02}.000+00:00",
            seq / 3600 % 24,
            seq / 60 % 60,
            seq % 60
        )
        .into();
        let mut map = body.as_object().unwrap().clone();
        for chain in ["seq", "prev", "file_id", "key", "hash", "sig"] {
            map.remove(chain);
        }
        BlockKind::Probe.refresh_digests(&mut map);
        let link = Link {
            seq,
            prev: last["hash"].as_str().unwrap().to_string(),
            file_id: last["file_id"].as_str().unwrap().to_string(),
        };
        let sealed = seal(map, &link, &key);
        std::io::Write::write_all(&mut out, &sealed.line).unwrap();
        blocks = vec![serde_json::from_slice(&sealed.line).unwrap()];
    }
}

#[test]
fn a_long_file_shows_the_last_200_blocks_of_a_target_and_the_first_64_targets_and_says_so() {
    let b = Bench::new("report-bounds");
    let ev = b.evidence.to_str().unwrap().to_string();
    let r = run(&b, &["probe", "-q", "-e", &ev, "--", fixture(), "correct"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let template = b.last_block();
    // 250 more runs of the same target, each a little slower; then 70 other targets.
    reseal(&b, &template, 250, |i, body| {
        body["timings_ms"]["total"] = (i + 1).into()
    });
    reseal(&b, &template, 70, |i, body| {
        body["target"]["command"]
            .as_array_mut()
            .unwrap()
            .push(format!("other-{i}").into());
    });
    assert_eq!(b.blocks().len(), 321);
    let key = b.public_key();
    let html = b.dir.join("r.html");
    let md = b.dir.join("r.md");
    let r = run(
        &b,
        &[
            "report",
            "--trust",
            &key,
            "--html",
            html.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            &ev,
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let first = page.split("<section class=\"target\"").nth(1).unwrap();
    assert!(first.contains("251 blocks"), "every block is counted");
    assert!(first.contains(
        "The last 200 blocks are shown; 51 older ones are counted above but not listed or charted."
    ));
    assert_eq!(first.matches("<tr><td>").count(), 200, "200 rows");
    assert!(
        first.contains("<tr><td>52</td>") && !first.contains("<tr><td>51</td>"),
        "the latest ones"
    );
    assert_eq!(
        first.matches("r=\"3.5\"").count(),
        400,
        "200 points in each of the two charts"
    );
    assert_eq!(page.matches("<section class=\"target\"").count(), 64);
    assert!(page.contains("64 shown; 7 more with 7 blocks not shown (only the first 64 targets are)"));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("- 7 more targets with 7 blocks not shown (only the first 64 are)"),
        "{text}"
    );
    assert!(
        text.contains("The last 200 blocks are shown; 51 older ones"),
        "{text}"
    );
}
