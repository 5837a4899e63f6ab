//! Turning a check report into the body of a `check` evidence block.

use super::model::CheckReport;
use crate::evidence::kind::BlockKind;
use crate::probe::record::target_json;
use serde_json::{Map, Value, json};

/// The block body of a check run.
pub fn block_body(r: &CheckReport) -> Map<String, Value> {
    let t = &r.target;
    let c = r.counts();
    let server = r
        .server
        .as_ref()
        .map(|s| json!({"name": s.name, "version": s.version}));
    let results: Vec<Value> = r
        .results
        .iter()
        .map(|x| json!({"id": x.id, "status": x.status.as_str(), "message": x.message}))
        .collect();
    let fields = json!({
        "target": target_json(t),
        "era": r.era.as_str(),
        "protocol_version": r.protocol_version,
        "server": server,
        "results": results,
        "counts": {"pass": c.pass, "warn": c.warn, "fail": c.fail, "skip": c.skip},
        "could_not_run": r.could_not_run,
        "bound": r.bound.map(crate::probe::outcome::Bound::as_str),
        "surface": r.surface.as_ref().map(crate::surface::Surface::to_json),
        "session": session_json(&r.session, t),
        "strict": r.strict,
        "duration_ms": r.duration_ms,
    });
    crate::evidence::block::body(BlockKind::Check, &r.stamp, &r.host, fields)
}

/// What the server processes showed, shaped like a probe block's `stderr` and `silence`;
/// for an HTTP server also its `http` facts, shaped like a probe block's.
fn session_json(s: &super::model::SessionSeen, t: &crate::probe::outcome::TargetSeen) -> Value {
    let mut v = json!({
        "stdout_bytes": s.stdout_bytes,
        "stderr": {"bytes": s.stderr_bytes, "tail": s.stderr_tail},
        "silence": s.silence.as_ref().map(crate::probe::outcome::Silence::to_json),
        "restarts": s.restarts,
    });
    if let (Some(http), Some(map)) = (&s.http, v.as_object_mut()) {
        map.insert("http".into(), crate::probe::record::http_json(http, t));
    }
    v
}
