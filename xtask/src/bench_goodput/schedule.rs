//! When the preemption case does what to which host: a spot notice every so often, on hosts 1
//! and 2 in turn (never host 0, whose agent serves the rendezvous: its hand-over is not built
//! yet), the host's VM gone [`KILL_AFTER`] later, and a fresh one back [`BACK_AFTER`] after
//! that. One list, in time order, that both sides follow.

use std::time::Duration;

use super::job::HOSTS;

/// From a notice to the host's processes killed: GCE's 30 s from a preemption notice to the
/// VM's stop.
pub(super) const KILL_AFTER: Duration = Duration::from_secs(30);
/// From the kill to a fresh agent started on the host (its notice withdrawn): a new VM.
pub(super) const BACK_AFTER: Duration = Duration::from_secs(30);

/// What happens to a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// Its metadata server says `instance/preempted: TRUE`.
    Notice(usize),
    /// Its agent and tasks killed (the VM stops); what is left of them, if the agent left.
    Kill(usize),
    /// The notice withdrawn and a fresh agent started: it rejoins.
    Back(usize),
}

/// The events of a run of `length` with a notice each `every` (the first at `every`, none in
/// the last `every`), by their time from the run's start; an event at or past the end is left
/// out.
pub(super) fn events(length: Duration, every: Duration) -> Vec<(Duration, Event)> {
    let mut events = Vec::new();
    let mut at = every;
    let mut turn = 0;
    while at + every <= length {
        let host = 1 + turn % (HOSTS - 1);
        events.push((at, Event::Notice(host)));
        events.push((at + KILL_AFTER, Event::Kill(host)));
        events.push((at + KILL_AFTER + BACK_AFTER, Event::Back(host)));
        turn += 1;
        at += every;
    }
    // A host back before the next notice on another: stable, so a tie keeps that order.
    events.sort_by_key(|(at, _)| *at);
    events.retain(|(at, _)| *at < length);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_each_period_on_hosts_1_and_2_in_turn() {
        let s = Duration::from_secs;
        // --quick: every minute for 3 minutes; host 2's fresh agent would come at the end.
        assert_eq!(
            events(s(180), s(60)),
            [
                (s(60), Event::Notice(1)),
                (s(90), Event::Kill(1)),
                (s(120), Event::Back(1)),
                (s(120), Event::Notice(2)),
                (s(150), Event::Kill(2)),
            ]
        );
        // Every 2 minutes for 10: four notices, the last host back 2 minutes before the end.
        let full = events(s(600), s(120));
        let notices: Vec<(Duration, Event)> = full
            .iter()
            .copied()
            .filter(|(_, e)| matches!(e, Event::Notice(_)))
            .collect();
        assert_eq!(
            notices,
            [
                (s(120), Event::Notice(1)),
                (s(240), Event::Notice(2)),
                (s(360), Event::Notice(1)),
                (s(480), Event::Notice(2)),
            ]
        );
        assert_eq!(full.len(), 12);
        assert_eq!(full.last(), Some(&(s(540), Event::Back(2))));
    }
}
