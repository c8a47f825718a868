//! Images in the chat: attached to a user message or returned by `read`, stored once beside the
//! transcript, and sent in each protocol's own shape to the fake provider, which records the
//! request bodies.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Value};
use vigil_core::protocol::{Attachment, ContentBlock, ErrorKind, Event, Op, ProviderKind, Role};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::{headless, runtime, until_finished, KINDS};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A small PNG with a gradient, so every pixel differs a little.
fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, 120]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn send(text: &str, paths: &[&Path]) -> Op {
    Op::UserMessage {
        text: text.into(),
        session_id: None,
        attachments: paths
            .iter()
            .map(|p| Attachment {
                path: p.display().to_string(),
                name: None,
            })
            .collect(),
    }
}

fn images_of(blocks: &[ContentBlock]) -> Vec<(String, String)> {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image { sha256, mime } => Some((sha256.clone(), mime.clone())),
            _ => None,
        })
        .collect()
}

/// The `image` blocks of an Anthropic body's last user message (with its `tool_result`s'),
/// or the `image_url` parts of an OpenAI body's user messages, as (media type, base64).
fn sent_images(kind: ProviderKind, body: &Value) -> Vec<(String, String)> {
    let messages = body["messages"].as_array().unwrap();
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m["role"] == "user") {
        let Some(parts) = m["content"].as_array() else { continue };
        for part in parts {
            let nested = part["content"].as_array().cloned().unwrap_or_default();
            for p in std::iter::once(part).chain(nested.iter()) {
                match kind {
                    ProviderKind::Anthropic if p["type"] == "image" => {
                        assert_eq!(p["source"]["type"], "base64", "{p}");
                        let field = |k: &str| p["source"][k].as_str().unwrap_or("<missing>").to_string();
                        out.push((field("media_type"), field("data")));
                    }
                    ProviderKind::Openai if p["type"] == "image_url" => {
                        let url = p["image_url"]["url"].as_str().unwrap_or("<missing>");
                        let (head, data) = url.split_once(";base64,").unwrap_or((url, "<not a base64 data URL>"));
                        out.push((head.trim_start_matches("data:").to_string(), data.to_string()));
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn an_attached_image_is_stored_by_hash_and_sent_in_each_protocols_shape() {
    for kind in KINDS {
        let fake = FakeLlm::start(Script::steps(vec![Step::text("A gradient.")]))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        let shot = dir.path().join("shot.png");
        let bytes = png(120, 80);
        std::fs::write(&shot, &bytes).unwrap();

        rt.submit(send("what is this?", &[&shot]));
        until_finished(&mut rx).await;

        // The transcript names the image; its bytes are in the session's blob folder only.
        let line = std::fs::read_to_string(dir.path().join("sessions/main.jsonl")).unwrap();
        assert!(!line.contains(&b64(&bytes)), "base64 in the transcript");
        let user = &rt.messages(None)[0];
        let sha = vigil_core::session::blobs::sha256_hex(&bytes);
        assert_eq!(images_of(&user.content), vec![(sha.clone(), "image/png".to_string())]);
        assert_eq!(user.text(), "what is this?");
        let blob = dir.path().join(format!("sessions/main.blobs/{sha}.png"));
        assert_eq!(std::fs::read(&blob).unwrap(), bytes);

        let body = &fake.requests()[0].body;
        assert_eq!(
            sent_images(kind, body),
            vec![("image/png".to_string(), b64(&bytes))],
            "{kind:?}"
        );
        let last = &body["messages"].as_array().unwrap().last().unwrap()["content"];
        match kind {
            ProviderKind::Anthropic => assert_eq!(last.as_array().unwrap().last().unwrap()["type"], "image"),
            ProviderKind::Openai => {
                let parts = last.as_array().unwrap();
                assert!(
                    parts[0]["text"].as_str().unwrap().ends_with("what is this?"),
                    "{parts:?}"
                );
                assert_eq!(parts[1]["type"], "image_url");
            }
        }
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn read_returns_an_image_file_as_an_image_in_the_tool_result() {
    for kind in KINDS {
        let fake = FakeLlm::start(Script::steps(vec![
            Step::tool_call("call_img", "read", json!({"path": "plot.png"})),
            Step::text("A plot."),
        ]))
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        let bytes = png(64, 64);
        std::fs::write(rt.workspace().join("plot.png"), &bytes).unwrap();

        rt.submit(super::support::user("look at plot.png"));
        until_finished(&mut rx).await;

        let results = rt
            .messages(None)
            .into_iter()
            .find(|m| m.role == Role::ToolResult)
            .unwrap();
        assert!(
            matches!(&results.content[0], ContentBlock::ToolResult { is_error: false, content, .. } if content.contains("plot.png is a PNG image")),
            "{:?}",
            results.content
        );
        let sha = vigil_core::session::blobs::sha256_hex(&bytes);
        assert_eq!(images_of(&results.content), vec![(sha, "image/png".to_string())]);

        let body = &fake.requests()[1].body;
        let messages = body["messages"].as_array().unwrap();
        match kind {
            // Inside the tool_result, after its text.
            ProviderKind::Anthropic => {
                let result = &messages.last().unwrap()["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["content"][0]["type"], "text");
                assert_eq!(result["content"][1]["type"], "image");
                assert_eq!(result["content"][1]["source"]["data"], b64(&bytes));
            }
            // A `tool` message takes text only: the image follows in a user message.
            ProviderKind::Openai => {
                let n = messages.len();
                assert_eq!(messages[n - 2]["role"], "tool");
                assert_eq!(messages[n - 1]["role"], "user");
                assert_eq!(
                    messages[n - 1]["content"][0]["text"],
                    "Images returned by tool call call_img:"
                );
                assert_eq!(sent_images(kind, body), vec![("image/png".to_string(), b64(&bytes))]);
            }
        }
        rt.shutdown().await;
    }
}

/// A PNG of noise just under 20 MB (3000 × 2160 RGB): nothing in it compresses.
pub fn noise_png_20mb(path: &Path) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(7);
    let (w, h) = (3000u32, 2160u32);
    let mut raw = vec![0u8; (w * h * 3) as usize];
    rng.fill(&mut raw);
    let img = image::RgbImage::from_raw(w, h, raw).unwrap();
    let mut out = Vec::new();
    let encoder = image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::NoFilter,
    );
    image::DynamicImage::ImageRgb8(img).write_with_encoder(encoder).unwrap();
    std::fs::write(path, &out).unwrap();
    out
}

#[tokio::test]
async fn a_20_mb_png_is_downscaled_to_1568_px_before_it_is_stored_and_sent() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text("Noise.")])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let big = dir.path().join("big.png");
    let bytes = noise_png_20mb(&big);
    assert!(bytes.len() > 19_000_000 && bytes.len() as u64 <= vigil_core::protocol::MAX_ATTACHMENT_BYTES);

    rt.submit(send("", &[&big]));
    until_finished(&mut rx).await;

    let user = &rt.messages(None)[0];
    let [(sha, mime)] = &images_of(&user.content)[..] else {
        panic!("{:?}", user.content)
    };
    let stored = rt.history(None).unwrap();
    assert!(stored.warnings.is_empty(), "{:?}", stored.warnings);
    let store = vigil_core::session::SessionStore::open(dir.path()).unwrap();
    let blob = store.read_image("main", sha, mime).unwrap().unwrap();
    let back = image::load_from_memory(&blob).unwrap();
    assert_eq!((back.width(), back.height()), (1568, 1129));
    // Noise does not compress: as PNG it would be over the 5 MB the API takes, so it is JPEG.
    assert_eq!(mime, "image/jpeg");
    assert!(blob.len() <= vigil_core::images::MAX_SENT_BYTES, "{}", blob.len());
    let sent = sent_images(ProviderKind::Anthropic, &fake.requests()[0].body);
    assert_eq!(sent, vec![("image/jpeg".to_string(), b64(&blob))]);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_corrupt_png_is_a_clear_error_and_nothing_is_sent_or_saved() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text("never")])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    let mut bytes = png(300, 200);
    bytes.truncate(bytes.len() * 2 / 3);
    let broken = dir.path().join("broken.png");
    std::fs::write(&broken, &bytes).unwrap();

    rt.submit(send("what is this?", &[&broken]));
    let env = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let Event::Error { kind, message } = &env.event else {
        panic!("{:?}", env.event)
    };
    assert_eq!(*kind, ErrorKind::Attachment);
    assert!(
        message.starts_with("Cannot send this image: broken.png could not be read as a PNG image"),
        "{message}"
    );
    assert!(message.ends_with("The message was not sent."), "{message}");
    assert_eq!(env.session_id.as_deref(), Some("main"));
    rt.idle().await;
    assert!(rx.try_recv().is_err(), "no turn started");
    assert_eq!(fake.request_count(), 0);
    assert!(rt.messages(None).is_empty());
    assert!(!dir.path().join("sessions/main.blobs").exists());
    rt.shutdown().await;
}

/// A pasted image is staged under a generated name; its refusal names it as the user knows it.
#[tokio::test]
async fn a_refused_staged_image_is_called_by_the_name_the_user_gave_it() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text("never")])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let mut bytes = png(300, 200);
    bytes.truncate(bytes.len() / 2);
    let staged = vigil_core::runtime::stage_attachment(dir.path(), "image.png", &bytes).unwrap();

    rt.submit(Op::UserMessage {
        text: "what is this?".into(),
        session_id: None,
        attachments: vec![Attachment {
            path: staged.display().to_string(),
            name: Some("cut-short.png".into()),
        }],
    });
    let env = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let Event::Error { kind, message } = &env.event else {
        panic!("{:?}", env.event)
    };
    assert_eq!(*kind, ErrorKind::Attachment);
    assert!(
        message.starts_with("Cannot send this image: cut-short.png could not be read as a PNG image"),
        "{message}"
    );
    let staged_name = staged.file_name().unwrap().to_string_lossy();
    assert!(!message.contains(&*staged_name), "{message}");
    rt.idle().await;
    assert_eq!(fake.request_count(), 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_missing_image_file_loads_as_a_placeholder_with_a_warning_and_the_chat_goes_on() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text("Seen."), Step::text("Still here.")]))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let shot = dir.path().join("shot.png");
    let bytes = png(40, 40);
    std::fs::write(&shot, &bytes).unwrap();
    rt.submit(send("look", &[&shot]));
    until_finished(&mut rx).await;

    let sha = vigil_core::session::blobs::sha256_hex(&bytes);
    std::fs::remove_file(dir.path().join(format!("sessions/main.blobs/{sha}.png"))).unwrap();
    let loaded = rt.history(None).unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains(&sha) && loaded.warnings[0].contains("missing"));
    let placeholder = vigil_core::session::blobs::missing_image_text(&sha);
    assert!(loaded.messages[0].content.contains(&ContentBlock::Text {
        text: placeholder.clone()
    }));

    rt.submit(super::support::user("and now?"));
    let events = until_finished(&mut rx).await;
    let reply: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reply, "Still here.", "{events:?}");
    let body = fake.requests()[1].body.to_string();
    assert!(body.contains(&placeholder) && !body.contains("\"image\""), "{body}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_model_that_refuses_images_gets_a_clear_error_and_the_message_stays() {
    for kind in KINDS {
        let refusal = Step::error(
            400,
            "invalid_request_error",
            "image input is not supported - hint: you may need to provide the mmproj",
        );
        let fake = FakeLlm::start(Script::steps(vec![refusal, Step::text("Text only, then.")]))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        let shot = dir.path().join("shot.png");
        std::fs::write(&shot, png(30, 30)).unwrap();

        rt.submit(send("what is this?", &[&shot]));
        let events = until_finished(&mut rx).await;
        let error = events
            .iter()
            .find_map(|e| match e {
                Event::Error { message, .. } => Some(message.clone()),
                _ => None,
            })
            .expect("an error");
        assert!(error.starts_with("This model does not accept images"), "{error}");
        let kept = rt.messages(None);
        assert_eq!(kept.len(), 1);
        assert_eq!(images_of(&kept[0].content).len(), 1, "the message and its image stay");

        // The same model is not sent the image again: the conversation goes on.
        rt.submit(super::support::user("ok, describe it from memory"));
        let events = until_finished(&mut rx).await;
        assert!(events.iter().all(|e| !matches!(e, Event::Error { .. })), "{events:?}");
        let body = &fake.requests()[1].body;
        assert!(sent_images(kind, body).is_empty());
        assert!(body.to_string().contains("this model does not accept images"), "{body}");
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn deleting_a_conversation_deletes_its_images() {
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    rt.submit(Op::CreateSession {
        title: Some("Pictures".into()),
    });
    let id = loop {
        let env = rx.recv().await.unwrap();
        if let Event::SessionsChanged { sessions } = env.event {
            break sessions.into_iter().find(|s| s.title == "Pictures").unwrap().id;
        }
    };
    let shot = dir.path().join("shot.png");
    std::fs::write(&shot, png(20, 20)).unwrap();
    rt.submit(Op::UserMessage {
        text: "keep this".into(),
        session_id: Some(id.clone()),
        attachments: vec![Attachment {
            path: shot.display().to_string(),
            name: None,
        }],
    });
    until_finished(&mut rx).await;
    let blobs = dir.path().join(format!("sessions/{id}.blobs"));
    assert_eq!(std::fs::read_dir(&blobs).unwrap().count(), 1);
    rt.submit(Op::DeleteSession { session_id: id });
    rt.idle().await;
    assert!(!blobs.exists());
    rt.shutdown().await;
}

/// Reads the headless runner's events until one `f` accepts (20 s at most).
fn until(lines: &mut impl Iterator<Item = std::io::Result<String>>, f: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let line = lines.next().expect("the runner is alive").unwrap();
        let event: Value = serde_json::from_str(&line).unwrap();
        if f(&event) {
            return event;
        }
    }
    panic!("no such event in time");
}

// Multi-threaded: this thread blocks reading the runner's output while the fake answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_with_images_survives_sigkill_and_reloads_with_them() {
    // The first reply streams slowly: the runner is killed while it is being written.
    let first = Step::text("a long look at the picture, word by word")
        .with_chunk_chars(4)
        .with_delay_ms(200);
    let fake = FakeLlm::start(
        Script::steps(vec![first])
            .with_api_key("sk-img")
            .with_fallback(Step::echo()),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data: PathBuf = dir.path().join("data");
    let shot = dir.path().join("shot.png");
    let bytes = png(200, 100);
    std::fs::write(&shot, &bytes).unwrap();

    let mut child = headless(&data, &fake, "sk-img").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let op = json!({"type": "user_message", "text": "what is this?", "attachments": [{"path": shot}]});
    writeln!(stdin, "{op}").unwrap();
    until(&mut lines, |e| e["type"] == "text_delta");
    child.kill().unwrap(); // SIGKILL, mid-reply
    child.wait().unwrap();

    let store = vigil_core::session::SessionStore::open(&data).unwrap();
    let loaded = store.load("main").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let [(sha, mime)] = &images_of(&loaded.messages[0].content)[..] else {
        panic!("{:?}", loaded.messages)
    };
    assert_eq!(store.read_image("main", sha, mime).unwrap().unwrap(), bytes);

    // A new runner on the same folder sends the image again with the next message.
    let mut child = headless(&data, &fake, "sk-img").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    writeln!(stdin, "{}", json!({"type": "user_message", "text": "still there?"})).unwrap();
    until(&mut lines, |e| e["type"] == "turn_finished");
    drop(stdin);
    child.wait().unwrap();
    let last = fake.requests().pop().unwrap();
    assert_eq!(
        sent_images(ProviderKind::Openai, &last.body),
        vec![("image/png".to_string(), b64(&bytes))]
    );
}
