//! The decision alone: who may answer, for which notification, with which key, how often.

use super::*;

const SERVER: &str = ":1.7";
const FORGER: &str = ":1.9";

fn waiting_for(id: &str) -> FocusTarget {
    FocusTarget {
        approval_id: Some(id.into()),
        session_id: Some("s1".into()),
        ..FocusTarget::default()
    }
}

/// Keys `k1`, `k2`, … in order, so a test can name them.
fn counter() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("k{n}")
    }
}

/// A ledger whose server is `SERVER`, with `target`'s notification up as id `id`.
fn with_one(id: u32, target: FocusTarget, keys: impl FnMut() -> String) -> Ledger {
    let mut ledger = Ledger::default();
    ledger.set_server(Some(SERVER.into()));
    if let Some(approval) = &target.approval_id {
        ledger.expect(approval);
    }
    let buttons = buttons(&target, keys);
    assert!(ledger.sent(SERVER, id, target, buttons));
    ledger
}

fn action(id: u32, key: &str) -> Signal {
    Signal::Action { id, key: key.into() }
}

const fn answer_is(decision: ApprovalDecision) -> impl Fn(&Outcome) -> bool {
    move |o| matches!(o, Outcome::Answer { decision: d, .. } if *d == decision)
}

#[test]
fn an_approval_that_waits_offers_allow_once_deny_and_open_under_fresh_keys_and_never_always() {
    let shown: Vec<_> = buttons(&waiting_for("a1"), counter())
        .into_iter()
        .map(|b| (b.key, b.label, b.choice))
        .collect();
    assert_eq!(
        shown,
        [
            ("default".to_string(), "Open", Choice::Open),
            (
                "k1".to_string(),
                "Allow once",
                Choice::Answer(ApprovalDecision::Approve)
            ),
            ("k2".to_string(), "Deny", Choice::Answer(ApprovalDecision::Deny)),
            ("k3".to_string(), "Open", Choice::Open),
        ]
    );
    assert_eq!(
        buttons(&FocusTarget::default(), counter()),
        [Button {
            key: "default".into(),
            label: "Open Vigil",
            choice: Choice::Open
        }]
    );
}

#[test]
fn keys_are_128_bit_and_never_repeat() {
    let keys: HashSet<String> = (0..1000).map(|_| new_token()).collect();
    assert_eq!(keys.len(), 1000);
    assert!(keys
        .iter()
        .all(|k| k.len() == 32 && k.chars().all(|c| c.is_ascii_hexdigit())));
}

#[test]
fn the_server_answers_once_with_the_key_of_the_button() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Answer {
            id: "a1".into(),
            decision: ApprovalDecision::Approve
        }
    );
    // A replay, or the other button after the first: the keys are used up.
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    assert_eq!(
        ledger.signal(SERVER, action(4, "k2")),
        Outcome::Ignored(Ignored::NotOurs)
    );

    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert!(answer_is(ApprovalDecision::Deny)(
        &ledger.signal(SERVER, action(4, "k2"))
    ));
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(ledger.signal(SERVER, action(4, "k3")), Outcome::Open(waiting_for("a1")));
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(
        ledger.signal(SERVER, action(4, "default")),
        Outcome::Open(waiting_for("a1"))
    );
}

#[test]
fn a_signal_from_anyone_but_the_owner_of_the_name_does_nothing_and_uses_nothing_up() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    for key in ["k1", "k2", "k3", "default"] {
        assert_eq!(
            ledger.signal(FORGER, action(4, key)),
            Outcome::Ignored(Ignored::NotTheServer)
        );
    }
    assert_eq!(
        ledger.signal(FORGER, Signal::Closed { id: 4 }),
        Outcome::Ignored(Ignored::NotTheServer)
    );
    // The real answer still counts.
    assert!(answer_is(ApprovalDecision::Approve)(
        &ledger.signal(SERVER, action(4, "k1"))
    ));
}

#[test]
fn the_old_well_known_keys_and_guessed_ones_do_nothing_even_from_the_server() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    for key in ["allow-once", "deny", "open", "always", "", "k4"] {
        assert_eq!(
            ledger.signal(SERVER, action(4, key)),
            Outcome::Ignored(Ignored::UnknownKey),
            "{key}"
        );
    }
    assert!(answer_is(ApprovalDecision::Deny)(
        &ledger.signal(SERVER, action(4, "k2"))
    ));
}

#[test]
fn another_approvals_key_does_nothing_on_this_one() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    ledger.expect("a2");
    let other = buttons(&waiting_for("a2"), || "other-allow".to_string());
    assert!(ledger.sent(SERVER, 5, waiting_for("a2"), other));
    assert_eq!(
        ledger.signal(SERVER, action(4, "other-allow")),
        Outcome::Ignored(Ignored::UnknownKey)
    );
    assert_eq!(
        ledger.signal(SERVER, action(5, "other-allow")),
        Outcome::Answer {
            id: "a2".into(),
            decision: ApprovalDecision::Approve
        }
    );
}

#[test]
fn an_id_vigil_did_not_send_does_nothing() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(
        ledger.signal(SERVER, action(3, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    assert_eq!(
        ledger.signal(SERVER, Signal::Closed { id: 3 }),
        Outcome::Ignored(Ignored::NotOurs)
    );
}

#[test]
fn a_new_owner_of_the_name_cannot_answer_what_the_old_one_showed_nor_can_the_old_one() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    ledger.set_server(Some(":1.20".into()));
    assert_eq!(
        ledger.signal(":1.20", action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotTheServer)
    );
    // Coming back under the same unique name is impossible (the bus never reuses one), and
    // the notification was forgotten anyway.
    ledger.set_server(Some(SERVER.into()));
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );

    let mut ledger = with_one(4, waiting_for("a1"), counter());
    ledger.set_server(None);
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotTheServer)
    );
}

#[test]
fn a_notification_numbered_by_a_server_that_no_longer_owns_the_name_is_dead() {
    let mut ledger = Ledger::default();
    ledger.set_server(Some(":1.20".into()));
    ledger.expect("a1");
    // The reply came from the old owner, after the name changed hands.
    assert!(ledger.sent(SERVER, 4, waiting_for("a1"), buttons(&waiting_for("a1"), counter())));
    assert_eq!(
        ledger.signal(":1.20", action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotTheServer)
    );
}

#[test]
fn an_answer_on_the_card_uses_the_keys_up_and_names_the_notification_to_close() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(ledger.resolved("a1"), Some((SERVER.to_string(), 4)));
    assert_eq!(ledger.resolved("a1"), None);
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
}

#[test]
fn an_approval_answered_while_its_notification_was_on_its_way_is_not_remembered() {
    let mut ledger = Ledger::default();
    ledger.set_server(Some(SERVER.into()));
    ledger.expect("a1");
    assert_eq!(ledger.resolved("a1"), None);
    assert!(!ledger.sent(SERVER, 4, waiting_for("a1"), buttons(&waiting_for("a1"), counter())));
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    // Nor is one nobody expected (a second notification for the same approval).
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert!(!ledger.sent(SERVER, 5, waiting_for("a1"), buttons(&waiting_for("a1"), counter())));
}

#[test]
fn closed_by_the_server_it_is_forgotten() {
    let mut ledger = with_one(4, waiting_for("a1"), counter());
    assert_eq!(ledger.signal(SERVER, Signal::Closed { id: 4 }), Outcome::Closed);
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::NotOurs)
    );
}

#[test]
fn a_plain_notification_only_opens_and_the_oldest_is_forgotten_past_the_bound_never_a_question() {
    let plain = FocusTarget {
        process_id: Some("p1".into()),
        ..FocusTarget::default()
    };
    let mut ledger = with_one(1, waiting_for("a1"), counter());
    for id in 2..=(MAX_LIVE as u32 + 1) {
        assert!(ledger.sent(SERVER, id, plain.clone(), buttons(&plain, counter())));
    }
    // Id 2 was the oldest plain one when the bound was reached; the question (id 1) stays.
    assert_eq!(
        ledger.signal(SERVER, action(2, "default")),
        Outcome::Ignored(Ignored::NotOurs)
    );
    assert_eq!(
        ledger.signal(SERVER, action(3, "default")),
        Outcome::Open(plain.clone())
    );
    assert_eq!(
        ledger.signal(SERVER, action(4, "k1")),
        Outcome::Ignored(Ignored::UnknownKey)
    );
    assert!(answer_is(ApprovalDecision::Approve)(
        &ledger.signal(SERVER, action(1, "k1"))
    ));
}

#[test]
fn a_late_reply_from_the_old_server_under_the_same_number_leaves_the_new_servers_notification_alone() {
    let mut ledger = Ledger::default();
    ledger.set_server(Some(":1.20".into()));
    ledger.expect("a1");
    assert!(ledger.sent(":1.20", 1, waiting_for("a1"), buttons(&waiting_for("a1"), counter())));
    ledger.expect("a2");
    let late = buttons(&waiting_for("a2"), || "late".to_string());
    assert!(ledger.sent(SERVER, 1, waiting_for("a2"), late));
    assert!(answer_is(ApprovalDecision::Approve)(
        &ledger.signal(":1.20", action(1, "k1"))
    ));
}
