//! The raw environment as a map, and the typed readers over it (numbers with ranges,
//! booleans, words, lists). Reads the process environment in one place only,
//! `Env::from_process`; every reader's error names its variable. Under test, every name a
//! reader asks for is recorded, so the table of honoured settings (`coverage.rs`) is checked
//! against what the parser really reads.

use std::collections::BTreeMap;
use std::str::FromStr;

use super::error::{ConfigError, Result};

/// The raw environment: variable name → value. Built from the process environment in
/// `main`, or from a map in tests, so parsing never touches the real environment.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// Every name a reader asked for (tests only: the coverage table is checked against it).
    #[cfg(test)]
    asked: std::cell::RefCell<std::collections::BTreeSet<&'static str>>,
}

/// The variables of the Hugging Face hub's client that `cpersona model install` honours
/// (`hub.rs`); the standard proxy variables are read by the HTTP client itself.
const HUB_VARS: [&str; 6] = [
    "HF_ENDPOINT",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_TOKEN",
    "HF_HUB_OFFLINE",
    "XDG_CACHE_HOME",
];

impl Env {
    /// Collect the `CPERSONA_*` and legacy `EMBEDDING_*` variables of this process, and the
    /// hub client's variables of [`HUB_VARS`].
    pub fn from_process() -> Result<Env> {
        let mut vars = BTreeMap::new();
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            if !(name.starts_with("CPERSONA_")
                || name.starts_with("EMBEDDING_")
                || HUB_VARS.contains(&name))
            {
                continue;
            }
            let value = value.into_string().map_err(|_| ConfigError::NotUnicode {
                var: name.to_owned(),
            })?;
            vars.insert(name.to_owned(), value);
        }
        Ok(Env::with_vars(vars))
    }

    /// Any variable of this process, by name: an ACL file's `${NAME}` token may name one
    /// outside `CPERSONA_*` (read here so the environment is read in this file only).
    pub fn process_var(name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn with_vars(vars: BTreeMap<String, String>) -> Env {
        Env {
            vars,
            #[cfg(test)]
            asked: Default::default(),
        }
    }

    /// An environment made of the given pairs (tests).
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Env {
        Env::with_vars(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    /// The names a reader asked for since this `Env` was built (tests).
    #[cfg(test)]
    pub(super) fn asked(&self) -> std::collections::BTreeSet<&'static str> {
        self.asked.borrow().clone()
    }

    /// The `CPERSONA_*` names that are set to a non-empty value, with their values.
    pub(super) fn cpersona_vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars
            .iter()
            .filter(|(name, value)| name.starts_with("CPERSONA_") && !value.trim().is_empty())
            .map(|(name, value)| (name.as_str(), value.trim()))
    }

    /// The value of `var`, with an empty value read as unset (as CPersona does).
    pub(super) fn get(&self, var: &'static str) -> Option<&str> {
        #[cfg(test)]
        self.asked.borrow_mut().insert(var);
        self.vars
            .get(var)
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// `var`, else the legacy unprefixed `alias` (the prefixed name wins, as in CPersona).
    pub(super) fn get_aliased(
        &self,
        var: &'static str,
        alias: &'static str,
    ) -> Option<(&'static str, &str)> {
        self.get(var)
            .map(|v| (var, v))
            .or_else(|| self.get(alias).map(|v| (alias, v)))
    }

    pub(super) fn parse<T: FromStr>(&self, var: &'static str, default: T) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(var) {
            None => Ok(default),
            Some(raw) => raw
                .parse::<T>()
                .map_err(|e| invalid(var, raw, e.to_string())),
        }
    }

    pub(super) fn parse_opt<T: FromStr>(&self, var: &'static str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(var) {
            None => Ok(None),
            Some(raw) => raw
                .parse::<T>()
                .map(Some)
                .map_err(|e| invalid(var, raw, e.to_string())),
        }
    }

    pub(super) fn float(&self, var: &'static str, default: f64, lo: f64, hi: f64) -> Result<f64> {
        let v: f64 = self.parse(var, default)?;
        if !v.is_finite() || v < lo || v > hi {
            return Err(invalid(
                var,
                &v.to_string(),
                format!("must be in {lo}..={hi}"),
            ));
        }
        Ok(v)
    }

    pub(super) fn int(&self, var: &'static str, default: u64, lo: u64, hi: u64) -> Result<u64> {
        let v: u64 = self.parse(var, default)?;
        if v < lo || v > hi {
            return Err(invalid(
                var,
                &v.to_string(),
                format!("must be in {lo}..={hi}"),
            ));
        }
        Ok(v)
    }

    pub(super) fn int_opt(&self, var: &'static str, lo: u64, hi: u64) -> Result<Option<u64>> {
        match self.parse_opt::<u64>(var)? {
            Some(v) if v < lo || v > hi => Err(invalid(
                var,
                &v.to_string(),
                format!("must be in {lo}..={hi}"),
            )),
            other => Ok(other),
        }
    }

    pub(super) fn boolean(&self, var: &'static str, default: bool) -> Result<bool> {
        match self.get(var) {
            None => Ok(default),
            Some(raw) => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(invalid(
                    var,
                    raw,
                    "expected true/false (or 1/0, yes/no, on/off)",
                )),
            },
        }
    }

    pub(super) fn word<T: Copy>(
        &self,
        var: &'static str,
        default: T,
        table: &[(&str, T)],
    ) -> Result<T> {
        match self.get(var) {
            None => Ok(default),
            Some(raw) => {
                let lower = raw.to_ascii_lowercase();
                table
                    .iter()
                    .find(|(name, _)| *name == lower)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| {
                        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                        invalid(var, raw, format!("expected one of {}", names.join(", ")))
                    })
            }
        }
    }

    pub(super) fn list(&self, var: &'static str) -> Vec<String> {
        self.get(var)
            .map(|raw| {
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub(super) fn invalid(var: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        var,
        value: value.to_owned(),
        reason: reason.into(),
    }
}
