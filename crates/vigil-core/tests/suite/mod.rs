mod agent;
mod headless;
mod provider;
mod runtime;
mod sessions;
mod support;
