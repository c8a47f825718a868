mod agent;
mod exec;
mod headless;
mod heartbeat;
mod provider;
mod runtime;
mod sessions;
mod support;
