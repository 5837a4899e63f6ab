//! Probe and check open their sessions with one engine: on every behaviour of the bundled
//! fixture, in every era choice, they agree on whether a session opened, the era, the
//! protocol version and the server's name.

use std::process::Command;
use std::time::Duration;

use mcp_witness::mcp::EraChoice;
use mcp_witness::probe::outcome::ReasonCode;
use mcp_witness::{CheckOptions, ProbeOptions, check, probe};

#[path = "common/fixture.rs"]
mod fixture_path;
use fixture_path::fixture;

/// Probe reasons that are the probe's own gates on a session that did open.
const PROBE_GATES: &[ReasonCode] = &[
    ReasonCode::MissingProtocolVersion,
    ReasonCode::UnknownProtocolVersion,
    ReasonCode::MissingServerInfo,
    ReasonCode::DiscoverMalformed,
];

/// Every behaviour the fixture lists, plus the ones that take an argument.
fn behaviours() -> Vec<Vec<String>> {
    let out = Command::new(fixture()).output().expect("the fixture runs");
    let usage = String::from_utf8_lossy(&out.stderr).into_owned();
    let list = usage
        .lines()
        .find_map(|l| l.strip_prefix("behaviours: "))
        .unwrap_or_else(|| panic!("the fixture's usage lists its behaviours: {usage}"));
    let mut all: Vec<Vec<String>> = list
        .split(", ")
        .filter(|b| !b.contains('<'))
        .map(|b| vec![b.to_string()])
        .collect();
    assert!(all.len() > 30, "{usage}");
    for (b, arg) in [
        ("slow-start", "50"),
        ("busy-start", "50"),
        ("huge-line", "2000000"),
        ("zeros-init", "100000"),
        ("invalid-tools-flood", "1000"),
        ("ping-flood", "64"),
    ] {
        all.push(vec![b.into(), arg.into()]);
    }
    all
}

/// What each side says the handshake established.
#[derive(Debug, PartialEq)]
struct Opened {
    opened: bool,
    era: &'static str,
    version: Option<String>,
    server: Option<String>,
}

fn command(behaviour: &[String]) -> Vec<String> {
    let mut c = vec![fixture().to_string()];
    c.extend(behaviour.iter().cloned());
    c
}

fn bounded(server: &mut mcp_witness::target::ServerOptions, era: EraChoice, version: Option<&str>) {
    server.era = era;
    server.protocol_version = version.map(str::to_string);
    server.timeout = Duration::from_millis(1000);
    server.deadline = Some(Duration::from_secs(20));
    server.grace.eof = Duration::from_millis(200);
    server.grace.term = Duration::from_millis(200);
}

fn by_probe(behaviour: &[String], era: EraChoice, version: Option<&str>) -> Opened {
    let mut opts = ProbeOptions::new(command(behaviour));
    bounded(&mut opts.server, era, version);
    let seen = probe(&opts);
    let gated = seen.reasons.iter().any(|r| PROBE_GATES.contains(&r.code));
    Opened {
        opened: seen.timings.tools_list.is_some() || gated,
        era: seen.era.as_str(),
        version: seen.protocol_version.clone(),
        server: seen.server.as_ref().map(|s| s.name.clone()),
    }
}

fn by_check(behaviour: &[String], era: EraChoice, version: Option<&str>) -> Opened {
    let mut opts = CheckOptions::new(command(behaviour));
    bounded(&mut opts.server, era, version);
    opts.only = vec!["protocol.handshake".into()];
    let report = check(&opts);
    Opened {
        opened: report.could_not_run.is_none(),
        era: report.era.as_str(),
        version: report.protocol_version.clone(),
        server: report.server.as_ref().map(|s| s.name.clone()),
    }
}

#[test]
fn probe_and_check_agree_on_the_handshake_of_every_fixture_behaviour_in_every_era() {
    let mut cases = Vec::new();
    for b in behaviours() {
        for era in [EraChoice::Legacy, EraChoice::Modern, EraChoice::Auto] {
            cases.push((b.clone(), era, None));
        }
    }
    // The case that once disagreed: a version the server does not speak, in the modern era.
    for version in ["2099-01-01", "2025-11-25", "2026-07-28"] {
        for era in [EraChoice::Modern, EraChoice::Auto, EraChoice::Legacy] {
            cases.push((vec!["modern".to_string()], era, Some(version)));
        }
    }
    let cases = std::sync::Mutex::new(cases);
    let disagreements = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                loop {
                    // Taken in its own statement: the lock must not be held while a case runs.
                    let next = cases.lock().unwrap().pop();
                    let Some((b, era, version)) = next else { break };
                    let p = by_probe(&b, era, version);
                    let c = by_check(&b, era, version);
                    if p != c {
                        disagreements.lock().unwrap().push(format!(
                            "{b:?} --era {} --protocol-version {version:?}:\n  probe {p:?}\n  check {c:?}",
                            era.as_str()
                        ));
                    }
                }
            });
        }
    });
    let d = disagreements.into_inner().unwrap();
    assert!(d.is_empty(), "{} disagreements:\n{}", d.len(), d.join("\n"));
}

#[test]
fn a_modern_server_asked_for_a_version_it_does_not_speak_is_probed_and_checked_alike() {
    let b = vec!["modern".to_string()];
    let p = by_probe(&b, EraChoice::Modern, Some("2099-01-01"));
    let c = by_check(&b, EraChoice::Modern, Some("2099-01-01"));
    assert_eq!(p, c);
    assert!(p.opened, "{p:?}");
    assert_eq!(p.era, "modern");
    assert_eq!(p.version.as_deref(), Some("2026-07-28"));
}
