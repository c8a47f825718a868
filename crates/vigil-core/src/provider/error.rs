//! What can go wrong talking to a model, in terms a user can act on.

use std::time::Duration;
use vigil_protocol::ErrorKind;

/// A provider failure. Each variant's message says what the user can do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// 401/403: the key is wrong, expired or missing. Recover: fix the key in Settings.
    #[error("The API key was rejected (HTTP {status}): {message}. Check the key in Settings.")]
    Auth { status: u16, message: String },
    /// The server does not serve this model. Recover: choose another model.
    #[error("The server does not know the model \"{model}\": {message}. Pick another model in Settings.")]
    ModelNotFound { model: String, message: String },
    /// 404 without a model complaint: usually a base URL with a wrong path.
    #[error("Nothing answers at {url} (HTTP 404). Check the base URL in Settings.")]
    EndpointNotFound { url: String },
    /// 400/422: the server refused the request. Recover: check the model and settings.
    #[error("The provider refused the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// 400/422 about image input: the model takes text only. The message is kept; later
    /// requests with this client send a line in place of each image. Recover: pick a model
    /// that accepts images, or go on without them.
    #[error("This model does not accept images (HTTP {status}): {message}. Pick a model that accepts images in Settings, or go on without them.")]
    ImagesNotAccepted { status: u16, message: String },
    /// The conversation no longer fits the model's context window. Recover: compact, retry.
    #[error("The conversation is too long for the model's context window: {message}")]
    ContextTooLong { message: String },
    /// 429 still after the retries. Recover: wait, or check the plan's limits.
    #[error("Rate limited by the provider (HTTP 429): {message}. Try again in a moment.")]
    RateLimited {
        message: String,
        retry_after: Option<Duration>,
    },
    /// 5xx/529 still after the retries. Recover: try again later.
    #[error("The provider is failing or overloaded (HTTP {status}): {message}. Try again later.")]
    Server {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The base URL could not be reached. Recover: check the URL and that the server runs.
    #[error("Could not reach {url}: {message}. Check the base URL and that the server is running.")]
    Network { url: String, message: String },
    /// No connection in time, or the stream went silent. Recover: retry; check the network.
    #[error("The provider did not answer within {seconds} s ({what}).")]
    Timeout { what: &'static str, seconds: u64 },
    /// The stream broke off or carried something unreadable; partial text is kept.
    #[error("The reply stream broke off: {message}")]
    Stream { message: String },
    /// The provider sent an error event after starting the reply (HTTP 200).
    #[error("The provider reported an error mid-reply ({error_type}): {message}")]
    InStream { error_type: String, message: String },
    /// The settings cannot make a request (bad URL…). Recover: fix them in Settings.
    #[error("{0}")]
    Config(String),
    /// The user pressed Stop.
    #[error("Stopped.")]
    Cancelled,
}

impl ProviderError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Server { .. }
            | ProviderError::Network { .. }
            | ProviderError::Timeout { .. } => true,
            ProviderError::InStream { error_type, .. } => {
                matches!(
                    error_type.as_str(),
                    "overloaded_error" | "api_error" | "rate_limit_error"
                )
            }
            _ => false,
        }
    }

    /// The delay the server asked for, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. } | ProviderError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The protocol's error class for the UI.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProviderError::Auth { .. } => ErrorKind::Auth,
            ProviderError::ModelNotFound { .. } => ErrorKind::ModelNotFound,
            ProviderError::EndpointNotFound { .. } | ProviderError::Config(_) => ErrorKind::Config,
            ProviderError::BadRequest { .. }
            | ProviderError::ContextTooLong { .. }
            | ProviderError::ImagesNotAccepted { .. } => ErrorKind::BadRequest,
            ProviderError::RateLimited { .. } => ErrorKind::RateLimited,
            ProviderError::Server { .. } => ErrorKind::Server,
            ProviderError::Network { .. } => ErrorKind::Network,
            ProviderError::Timeout { .. } => ErrorKind::Timeout,
            ProviderError::Stream { .. } | ProviderError::InStream { .. } => ErrorKind::Stream,
            ProviderError::Cancelled => ErrorKind::Stream,
        }
    }

    /// Classifies a non-success HTTP answer from its status, headers and body.
    pub(crate) fn from_status(status: u16, body: &str, retry_after: Option<Duration>, model: &str, url: &str) -> Self {
        let message = error_message_from_body(body);
        let lower = message.to_lowercase();
        match status {
            401 | 403 => ProviderError::Auth { status, message },
            404 if lower.contains("model") => ProviderError::ModelNotFound {
                model: model.to_string(),
                message,
            },
            404 => ProviderError::EndpointNotFound { url: url.to_string() },
            400 | 413 | 422 if is_context_overflow(&lower) => ProviderError::ContextTooLong { message },
            400 | 422 if refuses_images(&lower) => ProviderError::ImagesNotAccepted { status, message },
            400 | 422
                if lower.contains("model")
                    && (lower.contains("not found")
                        || lower.contains("does not exist")
                        || lower.contains("invalid model")) =>
            {
                ProviderError::ModelNotFound {
                    model: model.to_string(),
                    message,
                }
            }
            429 => ProviderError::RateLimited { message, retry_after },
            408 | 409 | 500..=599 => ProviderError::Server {
                status,
                message,
                retry_after,
            },
            _ => ProviderError::BadRequest { status, message },
        }
    }
}

/// How the services word "too long for the context window".
fn is_context_overflow(lower: &str) -> bool {
    [
        "prompt is too long",
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// How servers word "this model takes no images": OpenAI ("image_url is only supported by
/// certain models"), llama.cpp and Ollama ("image input is not supported", "does not support
/// images"), vLLM ("is not a multimodal model"), LM Studio ("Model does not support images").
/// A complaint about one image (too big, bad data) is not one of them.
fn refuses_images(lower: &str) -> bool {
    let about_images = lower.contains("image") || lower.contains("vision") || lower.contains("multimodal");
    let refusal = [
        "not support",
        "only supported",
        "unsupported",
        "not a multimodal",
        "does not accept",
    ]
    .iter()
    .any(|p| lower.contains(p));
    about_images && refusal
}

/// Pulls the human message out of either protocol's error body
/// (`{"error":{"message":…}}`), falling back to the raw text, shortened.
pub(crate) fn error_message_from_body(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "no details given".into();
    }
    let mut short: String = text.chars().take(300).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Parses `Retry-After` as seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0.5", now), Some(Duration::from_millis(500)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(30)));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn statuses_map_to_what_the_user_can_do() {
        let e = ProviderError::from_status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            None,
            "m",
            "u",
        );
        assert_eq!(
            e,
            ProviderError::Auth {
                status: 401,
                message: "invalid x-api-key".into()
            }
        );
        assert!(e.to_string().starts_with("The API key was rejected"));
        let e = ProviderError::from_status(
            404,
            r#"{"error":{"message":"The model `x` does not exist","code":"model_not_found"}}"#,
            None,
            "x",
            "u",
        );
        assert!(matches!(e, ProviderError::ModelNotFound { .. }));
        let e = ProviderError::from_status(404, "404 page not found", None, "x", "http://h/v1/chat/completions");
        assert_eq!(
            e,
            ProviderError::EndpointNotFound {
                url: "http://h/v1/chat/completions".into()
            }
        );
        let e = ProviderError::from_status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            None,
            "m",
            "u",
        );
        assert!(matches!(e, ProviderError::ContextTooLong { .. }));
        let e = ProviderError::from_status(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
            None,
            "m",
            "u",
        );
        assert!(matches!(e, ProviderError::ContextTooLong { .. }));
        for refusal in [
            r#"{"error":{"message":"Invalid content type. image_url is only supported by certain models.","type":"invalid_request_error"}}"#,
            r#"{"error":{"code":400,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"invalid_request_error"}}"#,
            r#"{"error":"Model does not support images. Please use a model that does."}"#,
            r#"{"object":"error","message":"llama-3 is not a multimodal model","type":"BadRequestError","code":400}"#,
        ] {
            let e = ProviderError::from_status(400, refusal, None, "m", "u");
            assert!(matches!(e, ProviderError::ImagesNotAccepted { .. }), "{refusal}: {e:?}");
            assert!(e.to_string().starts_with("This model does not accept images"), "{e}");
        }
        let e = ProviderError::from_status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.1.image.source.base64: image exceeds 5 MB maximum"}}"#,
            None,
            "m",
            "u",
        );
        assert!(matches!(e, ProviderError::BadRequest { .. }), "{e:?}");
        assert!(ProviderError::from_status(529, "{}", None, "m", "u").is_retryable());
        assert!(!ProviderError::from_status(400, "{}", None, "m", "u").is_retryable());
    }
}
