mod agent;
mod headless;
mod provider;
mod runtime;
mod support;
