//! Profiles: `get_profile` and `update_profile`, one row per agent (`user_id = ''`) upserted
//! as CPersona does. A profile is caller text; the engine never writes one itself.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::pauses::NoPersist;
use crate::text::{Refusal, check_agent, sanitise_cut};
use crate::time::now_ms;

/// `get_profile`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GetProfileOutcome {
    /// The profile text (`""` when none).
    pub profile: String,
}

/// `update_profile`'s arguments.
#[derive(Clone, Debug, Default)]
pub struct UpdateProfileRequest {
    /// Owner (required).
    pub agent_id: String,
    /// The new profile text.
    pub profile: String,
    /// Pause bucket.
    pub session_key: String,
}

/// `update_profile`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UpdateProfileOutcome {
    /// True.
    pub ok: bool,
    /// 1 when written, 0 when refused (empty) or paused.
    pub profiles_updated: u32,
    /// Present (true) when the cap cut the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Why nothing was written (`empty profile` / `empty after sanitization`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// `get_profile`.
pub(crate) fn get_profile(store: &Store, agent_id: &str) -> Result<GetProfileOutcome> {
    check_agent(agent_id)?;
    let profile: Option<String> = store.read(|conn| {
        Ok(conn
            .query_row(
                "SELECT content FROM profiles WHERE agent_id = ? AND user_id = ''",
                [agent_id],
                |row| row.get(0),
            )
            .optional()?)
    })?;
    Ok(GetProfileOutcome {
        profile: profile.unwrap_or_default(),
    })
}

/// `update_profile`: upsert on `(agent_id, user_id = '')`, capped at
/// [`crate::EngineConfig::max_profile_chars`].
pub(crate) fn update_profile(
    store: &Store,
    config: &EngineConfig,
    req: &UpdateProfileRequest,
) -> Result<UpdateProfileOutcome> {
    if let Some(no_persist) = store.no_persist("update_profile", &req.session_key) {
        return Ok(UpdateProfileOutcome {
            ok: true,
            profiles_updated: 0,
            truncated: None,
            reason: None,
            no_persist: Some(no_persist),
        });
    }
    check_agent(&req.agent_id)?;
    let text = match sanitise_cut(&req.profile, config.max_profile_chars) {
        Ok(text) => text,
        Err(Refusal::Nul) => return Err(Error::invalid("profile", "holds a NUL character")),
        Err(refusal) => {
            let reason = match refusal {
                Refusal::Empty => "empty profile",
                _ => "empty after sanitization",
            };
            return Ok(UpdateProfileOutcome {
                ok: true,
                profiles_updated: 0,
                truncated: None,
                reason: Some(reason.to_owned()),
                no_persist: None,
            });
        }
    };
    store.write(|tx| {
        tx.execute(
            "INSERT INTO profiles(agent_id, user_id, content, updated_at_ms) VALUES (?, '', ?, ?) \
             ON CONFLICT(agent_id, user_id) DO UPDATE SET content = excluded.content, \
             updated_at_ms = excluded.updated_at_ms",
            params![req.agent_id, text.text, now_ms()],
        )?;
        Ok(())
    })?;
    Ok(UpdateProfileOutcome {
        ok: true,
        profiles_updated: 1,
        truncated: text.truncated.then_some(true),
        reason: None,
        no_persist: None,
    })
}
