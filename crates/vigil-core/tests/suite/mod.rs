mod agent;
mod exec;
mod headless;
mod provider;
mod runtime;
mod sessions;
mod support;
