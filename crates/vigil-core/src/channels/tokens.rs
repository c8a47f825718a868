//! Who may answer from a phone. An approval pushed to a phone carries one [`Tokens::issue`]d
//! token: 128 random bits, bound to that approval, good until the approval is answered
//! anywhere or expires, and good once ([`Tokens::redeem`] takes it). A Telegram chat pairs
//! by a [`Pairing`] code shown in Settings: 10 minutes, 5 tries.
//!
//! Must never: accept a token for another approval, twice, or after its approval ended;
//! write a token anywhere (they live in memory and in the pushes the phone holds).

use std::collections::{HashMap, VecDeque};

/// Random bits in an approval token and in a generated topic.
pub const TOKEN_BITS: usize = 128;
/// How long a pairing code is good.
pub const PAIRING_MS: i64 = 10 * 60 * 1000;
/// Wrong codes before the pairing code is thrown away.
pub const PAIRING_TRIES: u32 = 5;
/// Tokens remembered after use, to tell the phone "already answered" instead of "unknown".
const REMEMBER_USED: usize = 256;

/// `bytes` random bytes from the OS, as lowercase hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // The OS's generator failing is not something to go on without.
    getrandom::fill(&mut buf).expect("the OS random number generator failed");
    hex::encode(buf)
}

/// Why an answer from a phone was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Never issued: forged, or for another Vigil.
    Unknown,
    /// Used already, or its approval was answered elsewhere or expired.
    AlreadyAnswered,
    /// Its approval's time ran out.
    Expired,
}

#[derive(Debug, Clone)]
struct Live {
    approval_id: String,
    /// ms since the epoch; `None`: until answered.
    expires_at: Option<i64>,
}

/// The tokens of approvals waiting on a phone.
#[derive(Debug, Default)]
pub struct Tokens {
    live: HashMap<String, Live>,
    by_approval: HashMap<String, String>,
    used: VecDeque<String>,
}

impl Tokens {
    /// The token for `approval_id` (the same one if it has one already).
    pub fn issue(&mut self, approval_id: &str, expires_at: Option<i64>) -> String {
        if let Some(t) = self.by_approval.get(approval_id) {
            return t.clone();
        }
        let token = random_hex(TOKEN_BITS / 8);
        self.live.insert(
            token.clone(),
            Live {
                approval_id: approval_id.to_string(),
                expires_at,
            },
        );
        self.by_approval.insert(approval_id.to_string(), token.clone());
        token
    }

    /// The approval `token` answers, taking the token: a second use is refused.
    pub fn redeem(&mut self, token: &str, now_ms: i64) -> Result<String, Refusal> {
        let Some(live) = self.live.remove(token) else {
            return Err(match self.used.iter().any(|t| t == token) {
                true => Refusal::AlreadyAnswered,
                false => Refusal::Unknown,
            });
        };
        self.by_approval.remove(&live.approval_id);
        self.remember(token);
        match live.expires_at {
            Some(at) if now_ms >= at => Err(Refusal::Expired),
            _ => Ok(live.approval_id),
        }
    }

    /// The approval ended (answered on the desktop, expired): its token answers nothing now.
    pub fn revoke(&mut self, approval_id: &str) {
        if let Some(token) = self.by_approval.remove(approval_id) {
            self.live.remove(&token);
            self.remember(&token);
        }
    }

    /// Whether `approval_id` still has a live token.
    pub fn is_live(&self, approval_id: &str) -> bool {
        self.by_approval.contains_key(approval_id)
    }

    fn remember(&mut self, token: &str) {
        self.used.push_back(token.to_string());
        if self.used.len() > REMEMBER_USED {
            self.used.pop_front();
        }
    }
}

/// Why a pairing attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairRefusal {
    /// No code is on screen (none asked for, expired, or its tries used up).
    NoCode,
    /// Wrong; this many tries are left (0: the code is gone).
    Wrong { left: u32 },
}

/// A pairing code on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    pub code: String,
    pub expires_at: i64,
    pub tries_left: u32,
}

/// Letters and digits no one misreads (no 0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

impl Pairing {
    /// A fresh 8-character code (about 40 bits: 5 guesses in 10 minutes find it with a
    /// chance of about 5 in 10^12).
    pub fn new(now_ms: i64) -> Self {
        let mut buf = [0u8; 8];
        getrandom::fill(&mut buf).expect("the OS random number generator failed");
        let code = buf
            .iter()
            .map(|b| CODE_ALPHABET[*b as usize % CODE_ALPHABET.len()] as char)
            .collect();
        Pairing {
            code,
            expires_at: now_ms + PAIRING_MS,
            tries_left: PAIRING_TRIES,
        }
    }

    /// Checks `text` (the code, or Telegram's `/start CODE`). `Ok`: paired; the caller
    /// drops the code. A wrong try uses one up.
    pub fn attempt(&mut self, text: &str, now_ms: i64) -> Result<(), PairRefusal> {
        if now_ms >= self.expires_at || self.tries_left == 0 {
            return Err(PairRefusal::NoCode);
        }
        let given = text.trim().trim_start_matches("/start").trim().to_ascii_uppercase();
        if given == self.code {
            return Ok(());
        }
        self.tries_left -= 1;
        Err(PairRefusal::Wrong { left: self.tries_left })
    }

    /// Still usable at `now_ms`.
    pub fn is_open(&self, now_ms: i64) -> bool {
        now_ms < self.expires_at && self.tries_left > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answers_its_approval_once() {
        let mut t = Tokens::default();
        let token = t.issue("a1", Some(1_000));
        assert_eq!(token.len(), TOKEN_BITS / 4, "128 bits as hex");
        assert_eq!(t.issue("a1", Some(1_000)), token, "one token per approval");
        assert_ne!(t.issue("a2", None), token);
        assert_eq!(t.redeem(&token, 500), Ok("a1".into()));
        assert_eq!(t.redeem(&token, 500), Err(Refusal::AlreadyAnswered), "a replay");
        assert_eq!(t.redeem("00112233445566778899aabbccddeeff", 500), Err(Refusal::Unknown));
    }

    #[test]
    fn a_token_dies_with_its_approval() {
        let mut t = Tokens::default();
        let late = t.issue("a1", Some(1_000));
        assert_eq!(t.redeem(&late, 1_000), Err(Refusal::Expired));
        let answered = t.issue("a2", None);
        t.revoke("a2");
        assert_eq!(t.redeem(&answered, 0), Err(Refusal::AlreadyAnswered));
    }

    #[test]
    fn a_pairing_code_takes_five_wrong_tries_and_ten_minutes() {
        let mut p = Pairing::new(0);
        assert_eq!(p.code.len(), 8);
        for left in (0..PAIRING_TRIES).rev() {
            assert_eq!(p.attempt("WRONG", 1), Err(PairRefusal::Wrong { left }));
        }
        let code = p.code.clone();
        assert_eq!(p.attempt(&code, 1), Err(PairRefusal::NoCode), "tries used up");
        let mut p = Pairing::new(0);
        let code = p.code.clone();
        assert_eq!(p.attempt(&code, PAIRING_MS), Err(PairRefusal::NoCode), "expired");
        let mut p = Pairing::new(0);
        let start = format!("/start {}", p.code.to_lowercase());
        assert_eq!(p.attempt(&start, PAIRING_MS - 1), Ok(()));
    }
}
