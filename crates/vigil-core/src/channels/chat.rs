//! A reply streamed to a Telegram chat: the text so far, shown as edits of one message (the
//! next one once it passes Telegram's limit), flushed at most once per edit interval.

use super::telegram::split;

/// One send or edit that brings the chat up to date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Send { index: usize, text: String },
    Edit { message_id: i64, text: String },
}

/// A reply on its way to a chat.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    pub chat_id: i64,
    pub text: String,
    /// What each message shows now, by message id.
    pub shown: Vec<(i64, String)>,
    pub finished: bool,
}

impl Stream {
    pub fn new(chat_id: i64) -> Self {
        Stream {
            chat_id,
            ..Default::default()
        }
    }

    /// What to send or edit now.
    pub fn steps(&self) -> Vec<Step> {
        let text = match (self.text.trim().is_empty(), self.finished) {
            (true, true) => "(Vigil finished without a written answer.)".to_string(),
            (true, false) => return Vec::new(),
            (false, _) => self.text.clone(),
        };
        split(&text)
            .into_iter()
            .enumerate()
            .filter_map(|(index, part)| match self.shown.get(index) {
                Some((_, shown)) if *shown == part => None,
                Some((message_id, _)) => Some(Step::Edit {
                    message_id: *message_id,
                    text: part,
                }),
                None => Some(Step::Send { index, text: part }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_reply_edits_its_message_and_continues_in_a_new_one_past_the_limit() {
        let mut s = Stream::new(7);
        assert_eq!(s.steps(), []);
        s.text = "Hello".into();
        assert_eq!(
            s.steps(),
            [Step::Send {
                index: 0,
                text: "Hello".into()
            }]
        );
        s.shown.push((10, "Hello".into()));
        assert_eq!(s.steps(), [], "nothing new, no edit");
        s.text = "x".repeat(5000);
        assert_eq!(
            s.steps(),
            [
                Step::Edit {
                    message_id: 10,
                    text: "x".repeat(4096)
                },
                Step::Send {
                    index: 1,
                    text: "x".repeat(904)
                }
            ]
        );
    }
}
