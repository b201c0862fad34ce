//! MCP prompts: the workflows the server's instructions describe, as templates a client shows
//! its user (issue 21). A prompt only words a request to the agent, naming the tools and the
//! arguments to pass; it reads nothing from the store, so it needs no grant and can leak no row.

use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::Value;

/// One prompt: its name, what it is for, its arguments (name, description, required), and how
/// its text is written from them.
struct Template {
    name: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str, bool)],
    write: fn(&Args<'_>) -> String,
}

const AGENT: (&str, &str, bool) = ("agent_id", "The agent whose memory this is.", true);
const PROJECT: (&str, &str, bool) = (
    "project_id",
    "The project bucket (that project plus the global pool); omit for no filter.",
    false,
);

const TEMPLATES: &[Template] = &[
    Template {
        name: "start_session",
        description: "Start a session: bring back what matters for a task before working on it.",
        arguments: &[AGENT, ("task", "What the session is about.", true), PROJECT],
        write: |a| {
            format!(
                "Before working on this task, call the `reconstruct` tool with agent_id \
                 {agent}, query {task}{project}, and read the items it returns: they are quoted \
                 from memory with their refs and times, never rewritten. If something there \
                 needs its whole text, pass its ref to `get_contents`. Then start on the task: \
                 {task}",
                agent = a.quoted("agent_id"),
                task = a.quoted("task"),
                project = a.optional("project_id", ", project_id "),
            )
        },
    },
    Template {
        name: "remember_this",
        description: "Store one fact, with who said it and when.",
        arguments: &[
            AGENT,
            (
                "content",
                "What to remember, in one self-contained sentence or two.",
                true,
            ),
            (
                "source_id",
                "Who said it (e.g. discord:12345); omit for the agent itself.",
                false,
            ),
            PROJECT,
        ],
        write: |a| {
            let source = a
                .get("source_id")
                .map(|id| format!(", source {{\"type\": \"User\", \"id\": {}}}", quote(id)))
                .unwrap_or_default();
            format!(
                "Call the `store` tool with agent_id {agent}, content {content}{source}{project} \
                 and timestamp set to the current time with its UTC offset. Answer with the id it \
                 returns, or with its error if it refused.",
                agent = a.quoted("agent_id"),
                content = a.quoted("content"),
                project = a.optional("project_id", ", project_id "),
            )
        },
    },
    Template {
        name: "what_do_i_know",
        description: "Recall what is known about a topic, optionally around a time.",
        arguments: &[
            AGENT,
            ("topic", "What to look for.", true),
            (
                "when",
                "When it happened, in words (\"last week\", \"in March\"); omit if unknown.",
                false,
            ),
            PROJECT,
        ],
        write: |a| {
            let cue = match a.get("when") {
                Some(when) => format!(
                    " and a time_cue for {} (after/before as ISO-8601 dates, or ago with a unit \
                     and value; confidence sure, likely or vague as the words warrant: the cue \
                     orders, it never filters)",
                    quote(when)
                ),
                None => String::new(),
            };
            format!(
                "Call the `recall` tool with agent_id {agent}, query {topic}{project}{cue}. \
                 Rows come in ascending relevance (the last is the best); answer from them, \
                 citing their refs, and say plainly when nothing relevant came back.",
                agent = a.quoted("agent_id"),
                topic = a.quoted("topic"),
                project = a.optional("project_id", ", project_id "),
            )
        },
    },
    Template {
        name: "end_session",
        description: "End a session: archive what happened as an episode.",
        arguments: &[
            AGENT,
            (
                "summary",
                "What happened, if you already have it; otherwise the agent writes it.",
                false,
            ),
            PROJECT,
        ],
        write: |a| {
            let summary = match a.get("summary") {
                Some(summary) => format!("summary {}", quote(summary)),
                None => "a summary of this session you write now (what was decided, what is \
                         open, names and dates as they were said)"
                    .to_owned(),
            };
            format!(
                "Call the `archive_episode` tool with agent_id {agent}{project} and {summary}. \
                 Store any single fact worth finding on its own with `store` first.",
                agent = a.quoted("agent_id"),
                project = a.optional("project_id", ", project_id "),
            )
        },
    },
];

/// A prompt's arguments as the client sent them (strings only).
struct Args<'a>(&'a JsonObject);

impl Args<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    fn quoted(&self, name: &str) -> String {
        quote(self.get(name).unwrap_or_default())
    }

    /// `prefix` followed by the quoted value, or nothing when the argument is absent.
    fn optional(&self, name: &str, prefix: &str) -> String {
        self.get(name)
            .map(|v| format!("{prefix}{}", quote(v)))
            .unwrap_or_default()
    }
}

/// A value as a JSON string, so quotes and newlines in it cannot break the sentence's syntax.
fn quote(value: &str) -> String {
    Value::String(value.to_owned()).to_string()
}

/// Every prompt, for `prompts/list`.
pub(crate) fn list() -> Vec<Prompt> {
    TEMPLATES
        .iter()
        .map(|t| {
            let arguments = t
                .arguments
                .iter()
                .map(|(name, description, required)| {
                    PromptArgument::new(*name)
                        .with_description(*description)
                        .with_required(*required)
                })
                .collect();
            Prompt::new(t.name, Some(t.description), Some(arguments))
        })
        .collect()
}

/// `prompts/get`: the prompt's one user message, or why not (an unknown name, a required
/// argument missing or not a string, an argument the prompt does not take).
pub(crate) fn get(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, String> {
    let template = TEMPLATES
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("no prompt named {name:?}"))?;
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    for (key, value) in arguments {
        if !template.arguments.iter().any(|(name, ..)| name == key) {
            return Err(format!("prompt {name} takes no argument {key:?}"));
        }
        if !value.is_string() {
            return Err(format!("prompt argument {key:?} must be a string"));
        }
    }
    let args = Args(arguments);
    for (argument, _, required) in template.arguments {
        if *required && args.get(argument).is_none() {
            return Err(format!("prompt {name} needs the argument {argument:?}"));
        }
    }
    let text = (template.write)(&args);
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(template.description),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap()
    }

    fn text(result: &GetPromptResult) -> String {
        let message = &result.messages[0];
        assert_eq!(message.role, Role::User);
        message.content.as_text().unwrap().text.clone()
    }

    #[test]
    fn each_prompt_names_its_tool_and_quotes_its_arguments() {
        let cases = [
            (
                "start_session",
                json!({"agent_id": "a", "task": "plan \"Q3\"", "project_id": "p"}),
                "reconstruct",
            ),
            (
                "remember_this",
                json!({"agent_id": "a", "content": "likes tea", "source_id": "discord:1"}),
                "store",
            ),
            (
                "what_do_i_know",
                json!({"agent_id": "a", "topic": "tea", "when": "last week"}),
                "recall",
            ),
            ("end_session", json!({"agent_id": "a"}), "archive_episode"),
        ];
        assert_eq!(list().len(), cases.len());
        for (name, arguments, tool) in cases {
            let written = text(&get(name, Some(&args(arguments.clone()))).unwrap());
            assert!(written.contains(&format!("`{tool}`")), "{name}: {written}");
            for value in arguments.as_object().unwrap().values() {
                let quoted = value.to_string();
                assert!(
                    written.contains(&quoted),
                    "{name} lacks {quoted}: {written}"
                );
            }
        }
        let stored = text(
            &get(
                "remember_this",
                Some(&args(json!({"agent_id": "a",
            "content": "x", "source_id": "discord:1"}))),
            )
            .unwrap(),
        );
        assert!(
            stored.contains(r#"source {"type": "User", "id": "discord:1"}"#),
            "{stored}"
        );
    }

    #[test]
    fn missing_unknown_and_non_string_arguments_are_refused() {
        assert!(get("nope", None).unwrap_err().contains("no prompt"));
        assert!(
            get("start_session", Some(&args(json!({"agent_id": "a"}))))
                .unwrap_err()
                .contains("task")
        );
        assert!(
            get(
                "end_session",
                Some(&args(json!({"agent_id": "a", "extra": "x"})))
            )
            .unwrap_err()
            .contains("extra")
        );
        assert!(
            get("end_session", Some(&args(json!({"agent_id": 7}))))
                .unwrap_err()
                .contains("string")
        );
        // Optional arguments may be left out.
        assert!(get("end_session", Some(&args(json!({"agent_id": "a"})))).is_ok());
    }
}
