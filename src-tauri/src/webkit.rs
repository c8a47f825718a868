//! A WebKitGTK setting wry does not expose: how often the page's web process measures its
//! own memory.
//!
//! WebKit's web process reads all of `/proc/self/smaps` every 30 s (its memory pressure
//! handler's poll) to see whether the page alone has grown past a third of the RAM. For
//! Vigil's window, hidden in the tray all day, that read was three quarters of its idle CPU:
//! 10–15 ms of kernel time per read, ~25 ms a minute, window open or closed
//! (`make bench-app`; the app itself idles at ~7 ms a minute). The page is Vigil's own UI, so
//! a page past a third of the RAM is a bug, not a load to shed quickly: a check every five
//! minutes is plenty. Pressure on the whole system still reaches the page at once, because
//! the app's own monitor (WebKit's `PressureMonitor` thread, every 5 s) is untouched.
//!
//! The interval is part of the `WebKitWebContext`'s construct-only `memory-pressure-settings`,
//! and wry builds the context itself. So [`check_page_memory_every`] wraps the class's
//! GObject constructor, before any context exists, to give that property a value when the
//! caller left it unset; every other setting keeps WebKit's default.

use std::ffi::{c_uint, CStr};
use std::sync::OnceLock;
use std::time::Duration;

use webkit2gtk::ffi as webkit;
use webkit2gtk::glib::ffi::GType;
use webkit2gtk::glib::gobject_ffi::{
    g_object_class_find_property, g_type_class_ref, g_value_get_boxed, g_value_set_boxed, GObject, GObjectClass,
    GObjectConstructParam,
};

/// How often the page's web process measures its own memory (WebKit's default: 30 s).
pub const PAGE_MEMORY_CHECK: Duration = Duration::from_secs(300);

const PROPERTY: &CStr = c"memory-pressure-settings";

type Constructor = unsafe extern "C" fn(GType, c_uint, *mut GObjectConstructParam) -> *mut GObject;

/// What the wrapper needs: the class's own constructor and the settings to fill in.
struct Hook {
    chained: Constructor,
    /// Made once and never freed: every context takes its own copy.
    settings: *mut webkit::WebKitMemoryPressureSettings,
}

// SAFETY: `settings` is only read (copied by `g_value_set_boxed`) after it was made, and the
// boxed type has no thread affinity.
unsafe impl Send for Hook {}
unsafe impl Sync for Hook {}

static HOOK: OnceLock<Hook> = OnceLock::new();

/// Makes every web process Vigil starts from now on measure its own memory every `interval`.
/// Call before the first window is made; later calls change nothing.
pub fn check_page_memory_every(interval: Duration) {
    if HOOK.get().is_some() {
        return;
    }
    // SAFETY: the class is referenced and never released (it lives as long as the process
    // anyway); its constructor is replaced on the main thread before any instance exists,
    // and the wrapper chains to the original with the same arguments.
    unsafe {
        let class = g_type_class_ref(webkit::webkit_web_context_get_type()).cast::<GObjectClass>();
        if g_object_class_find_property(class, PROPERTY.as_ptr()).is_null() {
            tracing::warn!("this WebKitGTK has no memory-pressure-settings: the page keeps its 30 s memory check");
            return;
        }
        let Some(chained) = (*class).constructor else { return };
        let settings = webkit::webkit_memory_pressure_settings_new();
        webkit::webkit_memory_pressure_settings_set_poll_interval(settings, interval.as_secs_f64());
        if HOOK.set(Hook { chained, settings }).is_ok() {
            (*class).constructor = Some(construct);
        }
    }
}

/// The context's constructor, with `memory-pressure-settings` filled in when left unset.
unsafe extern "C" fn construct(type_: GType, n: c_uint, params: *mut GObjectConstructParam) -> *mut GObject {
    let hook = HOOK.get().expect("the hook is set before it is installed");
    if !params.is_null() {
        // SAFETY: GObject passes `n` construct parameters, each a property spec and a value
        // of that property's type (a boxed WebKitMemoryPressureSettings for ours).
        for param in std::slice::from_raw_parts(params, n as usize) {
            if CStr::from_ptr((*param.pspec).name) == PROPERTY && g_value_get_boxed(param.value).is_null() {
                g_value_set_boxed(param.value, hook.settings.cast());
            }
        }
    }
    (hook.chained)(type_, n, params)
}
