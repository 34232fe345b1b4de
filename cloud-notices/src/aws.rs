//! EC2's notices through IMDSv2: a session token (`PUT /latest/api/token` with its TTL,
//! renewed before it expires, fetched again on a 401), then every poll (AWS advises every
//! 5 s) `spot/instance-action` (404 until about 2 minutes before a spot instance is
//! stopped, then `{"action": ..., "time": ...}`), `events/recommendations/rebalance`
//! (`{"noticeTime": ...}`, no deadline, best effort) and `events/maintenance/scheduled` (the
//! instance's scheduled events, `NotBefore` their start).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hyper::Method;
use serde_json::Value;

use crate::board::{Board, Trouble, chain, quote};
use crate::http::Http;
use crate::watcher::Timing;
use crate::{Cloud, Notice, NoticeKind, time};

/// The sources read each poll, under `/latest/meta-data/`.
const SPOT: &str = "spot/instance-action";
const REBALANCE: &str = "events/recommendations/rebalance";
const SCHEDULED: &str = "events/maintenance/scheduled";

/// IMDSv2's session: its token and when it expires.
struct Session {
    http: Http,
    base: String,
    ttl: Duration,
    request: Duration,
    token: Option<(String, Instant)>,
}

/// Why a read failed.
enum Failed {
    /// The token could not be had: nothing else can be read.
    Token(String),
    /// This read failed.
    Read(String),
}

impl Session {
    /// A token with at least a quarter of its life (or a minute) left, fetched when not.
    async fn token(&mut self) -> Result<String, Failed> {
        let margin = (self.ttl / 4).min(Duration::from_secs(60));
        if let Some((token, expires)) = &self.token
            && Instant::now() + margin < *expires
        {
            return Ok(token.clone());
        }
        self.token = None;
        let url = format!("{}/latest/api/token", self.base);
        let ttl = self.ttl.as_secs().to_string();
        let asked = Instant::now();
        let answer = self
            .http
            .send(
                Method::PUT,
                &url,
                &[("X-aws-ec2-metadata-token-ttl-seconds", &ttl)],
                None,
                self.request,
            )
            .await
            .map_err(|e| Failed::Token(chain(&e)))?;
        let token = answer.body.trim();
        let printable =
            !token.is_empty() && token.len() <= 1024 && token.bytes().all(|b| b.is_ascii_graphic());
        if answer.status != 200 || !printable {
            return Err(Failed::Token(format!(
                "PUT {url} answered {}: {}",
                answer.status,
                quote(&answer.body)
            )));
        }
        self.token = Some((token.to_owned(), asked + self.ttl));
        Ok(token.to_owned())
    }

    /// `GET /latest/meta-data/{path}`: its status and body; a 401 drops the token, and the
    /// read is tried once more with a new one.
    async fn get(&mut self, path: &str) -> Result<(u16, String), Failed> {
        for _ in 0..2 {
            let token = self.token().await?;
            let url = format!("{}/latest/meta-data/{path}", self.base);
            let answer = self
                .http
                .send(
                    Method::GET,
                    &url,
                    &[("X-aws-ec2-metadata-token", &token)],
                    None,
                    self.request,
                )
                .await
                .map_err(|e| Failed::Read(chain(&e)))?;
            if answer.status != 401 {
                return Ok((answer.status, answer.body));
            }
            self.token = None;
        }
        Err(Failed::Read(format!("{path}: 401 with a new token")))
    }
}

/// Polls until dropped.
pub(crate) async fn watch(http: Http, base: String, board: Arc<Board>, timing: Timing) {
    let mut session = Session {
        http,
        base,
        ttl: timing.aws_token_ttl,
        request: timing.request,
        token: None,
    };
    let mut token_trouble = Trouble::new(Cloud::Aws, "api/token");
    let mut troubles = [SPOT, REBALANCE, SCHEDULED].map(|s| Trouble::new(Cloud::Aws, s));
    loop {
        for (source, trouble) in [SPOT, REBALANCE, SCHEDULED].into_iter().zip(&mut troubles) {
            match session.get(source).await {
                Ok((status, body)) => {
                    token_trouble.ok();
                    match read(source, status, &body) {
                        Ok(notice) => {
                            trouble.ok();
                            board.set(source, notice);
                        }
                        Err(problem) => trouble.failed(problem),
                    }
                }
                Err(Failed::Token(problem)) => {
                    token_trouble.failed(problem);
                    break;
                }
                Err(Failed::Read(problem)) => trouble.failed(problem),
            }
        }
        tokio::time::sleep(timing.poll).await;
    }
}

/// What `source`'s answer announces, or why it cannot be read.
fn read(source: &'static str, status: u16, body: &str) -> Result<Option<Notice>, String> {
    let answered = || format!("answered {status}: {}", quote(body));
    match (source, status) {
        (SPOT | REBALANCE, 404) => return Ok(None),
        (_, 200) => {}
        _ => return Err(answered()),
    }
    let document: Value = serde_json::from_str(body).map_err(|_| answered())?;
    let notice = |kind, deadline, detail: String, event_id| Notice {
        cloud: Cloud::Aws,
        kind,
        deadline,
        source,
        event_id,
        detail,
    };
    match source {
        SPOT => {
            let action = document["action"].as_str().ok_or_else(answered)?;
            let deadline = document["time"].as_str().and_then(time::rfc3339);
            let deadline = deadline.ok_or_else(answered)?;
            Ok(Some(notice(
                NoticeKind::Preemption,
                Some(deadline),
                action.to_owned(),
                None,
            )))
        }
        REBALANCE => {
            let noticed = document["noticeTime"].as_str().ok_or_else(answered)?;
            Ok(Some(notice(
                NoticeKind::Rebalance,
                None,
                format!("noticeTime {noticed}"),
                None,
            )))
        }
        _ => {
            // The active events (not completed or canceled), the nearest first.
            let events = document.as_array().ok_or_else(answered)?;
            let mut nearest: Option<(SystemTime, &Value)> = None;
            for event in events.iter().filter(|e| e["State"] == "active") {
                let start = event["NotBefore"].as_str().and_then(time::http_date);
                let start = start.ok_or_else(answered)?;
                if nearest.is_none_or(|(t, _)| start < t) {
                    nearest = Some((start, event));
                }
            }
            Ok(nearest.map(|(start, event)| {
                let code = event["Code"]
                    .as_str()
                    .unwrap_or("scheduled event")
                    .to_owned();
                let id = event["EventId"].as_str().map(str::to_owned);
                notice(NoticeKind::Maintenance, Some(start), code, id)
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_answers_read_as_notices() {
        let spot = read(
            SPOT,
            200,
            r#"{"action": "terminate", "time": "2017-09-18T08:22:00Z"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (spot.kind, spot.detail.as_str()),
            (NoticeKind::Preemption, "terminate")
        );
        assert_eq!(spot.deadline, time::rfc3339("2017-09-18T08:22:00Z"));
        let rebalance = read(REBALANCE, 200, r#"{"noticeTime": "2020-10-27T08:22:00Z"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            (rebalance.kind, rebalance.deadline),
            (NoticeKind::Rebalance, None)
        );
        let scheduled = r#"[ {
            "NotBefore" : "21 Jan 2019 09:00:43 GMT",
            "Code" : "system-reboot",
            "Description" : "scheduled reboot",
            "EventId" : "instance-event-0d59937288b749b32",
            "NotAfter" : "21 Jan 2019 09:17:23 GMT",
            "State" : "active"
        } ]"#;
        let event = read(SCHEDULED, 200, scheduled).unwrap().unwrap();
        assert_eq!(event.kind, NoticeKind::Maintenance);
        assert_eq!(
            event.event_id.as_deref(),
            Some("instance-event-0d59937288b749b32")
        );
        assert_eq!(event.deadline, time::http_date("21 Jan 2019 09:00:43 GMT"));
        assert_eq!(read(SPOT, 404, "").unwrap(), None);
        assert_eq!(read(SCHEDULED, 200, "[]").unwrap(), None);
        let done = scheduled.replace("\"active\"", "\"completed\"");
        assert_eq!(read(SCHEDULED, 200, &done).unwrap(), None);
    }

    #[test]
    fn garbage_is_a_problem_not_a_notice() {
        for (source, status, body) in [
            (SPOT, 200, "not json"),
            (SPOT, 200, r#"{"action": "terminate", "time": "soon"}"#),
            (SPOT, 200, r#"{"time": "2017-09-18T08:22:00Z"}"#),
            (SPOT, 500, "oops"),
            (REBALANCE, 200, "{}"),
            (SCHEDULED, 404, ""),
            (
                SCHEDULED,
                200,
                r#"[{"State": "active", "NotBefore": "tomorrow"}]"#,
            ),
        ] {
            let problem = read(source, status, body).unwrap_err();
            assert!(
                problem.starts_with(&format!("answered {status}: ")),
                "{problem}"
            );
        }
    }
}
