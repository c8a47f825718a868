//! `cargo bench -p vigil-core --bench images` (in `make bench`): attaching a 20 MB PNG to the
//! request being sent, against the goal of 1 s, with the peak memory it took.
//!
//! Timed from the `user_message` op with the attachment to the fake provider having the whole
//! request body: read the file, decode it whole, downscale to 1 568 px, re-encode, store it
//! with the session (fsync'd), save the message, read the image back, base64 it into the
//! body, and send it over loopback. The PNG is noise, the worst case: nothing in it
//! compresses, so decoding and re-encoding do the most work (and it goes out as JPEG).
//! Peak memory is the process's high-water mark (VmHWM) from just before the op, the fake's
//! copy of the received body included.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_core::clock::SystemClock;
use vigil_core::events::CollectingSink;
use vigil_core::protocol::{Attachment, Op, ProviderKind};
use vigil_core::provider::{ModelClient, ProviderConfig};
use vigil_fake_llm::{FakeLlm, Script, Step};

const GOAL: Duration = Duration::from_secs(1);
const RUNS: usize = 5;

/// A PNG of noise just under 20 MB (3000 × 2160 RGB).
fn noise_png(path: &std::path::Path) -> usize {
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
    out.len()
}

/// Peak resident set (VmHWM) in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Current resident set (VmRSS) in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Resets the peak so the run reports its own (Linux: `5` > clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// One run: a fresh data folder, the op, and the time until the fake holds the request.
async fn attach_once(fake: &FakeLlm, png: &std::path::Path) -> (Duration, f64, f64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, fake.anthropic_base_url(), "fake-model");
    cfg.max_retries = 0;
    let rt = vigil_core::Runtime::new(dir.path(), Arc::new(SystemClock), Arc::new(CollectingSink::default())).unwrap();
    rt.set_client(Some(ModelClient::new(cfg, Arc::new(SystemClock)).unwrap()));
    let before = fake.request_count();
    let base = rss_mib();
    reset_peak();
    let start = Instant::now();
    rt.submit(Op::UserMessage {
        text: "what is in this picture?".into(),
        session_id: None,
        attachments: vec![Attachment {
            path: png.display().to_string(),
            name: None,
        }],
    });
    while fake.request_count() == before {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let took = start.elapsed();
    let peak = peak_rss_mib();
    let body = fake.requests().pop().unwrap().body.to_string().len();
    rt.idle().await;
    rt.shutdown().await;
    (took, base, peak, body)
}

#[tokio::main]
async fn main() {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("A picture of noise.")))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("noise.png");
    let size = noise_png(&png);
    println!(
        "attach a {:.1} MB PNG (3000 × 2160 noise) to the request being sent:",
        size as f64 / 1e6
    );
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for run in 0..RUNS {
        let (took, base, peak, body) = attach_once(&fake, &png).await;
        println!(
            "  run {}: {:>7.1} ms  peak RSS {:.0} MiB (+{:.0} MiB over the {:.0} MiB before)  body {:.1} MB",
            run + 1,
            took.as_secs_f64() * 1e3,
            peak,
            peak - base,
            base,
            body as f64 / 1e6
        );
        times.push(took);
        peaks.push(peak - base);
    }
    times.sort();
    peaks.sort_by(f64::total_cmp);
    let median = times[RUNS / 2];
    let worst = times[RUNS - 1];
    println!(
        "attach 20 MB PNG → request sent: median {:.0} ms, worst {:.0} ms; goal ≤ {} ms: {:.2}× the goal ({}); \
         peak memory +{:.0} MiB (median run)",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        GOAL.as_millis(),
        worst.as_secs_f64() / GOAL.as_secs_f64(),
        if worst <= GOAL { "met" } else { "MISSED" },
        peaks[RUNS / 2]
    );
}
