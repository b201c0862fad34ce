//! Property tests of the isolation helper: the SQL predicate reads exactly the rows the
//! CPersona semantics admit, over random rows of several agents, projects and channels.

use proptest::prelude::*;
use rusqlite::Connection;

use super::*;

const AGENTS: &[&str] = &["a", "b", "", "a'b"];
const PROJECTS: &[&str] = &["", "p1", "p2"];
const CHANNELS: &[&str] = &["", "c1", "c2"];

fn table(rows: &[(usize, usize, usize)]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, agent_id TEXT, project_id TEXT, channel TEXT)",
    )
    .unwrap();
    for (id, &(agent, project, channel)) in rows.iter().enumerate() {
        conn.execute(
            "INSERT INTO t VALUES (?, ?, ?, ?)",
            rusqlite::params![
                id as i64,
                AGENTS[agent],
                PROJECTS[project],
                CHANNELS[channel]
            ],
        )
        .unwrap();
    }
    conn
}

fn read_ids(conn: &Connection, scope: &Scope) -> Vec<i64> {
    let (pred, params) = scope.predicate("t");
    let sql = format!("SELECT id FROM t WHERE {pred} ORDER BY id");
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map(rusqlite::params_from_iter(params), |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The CPersona semantics written out independently of `Scope::admits`.
fn expected(
    row: (usize, usize, usize),
    agent: Option<&str>,
    project: Option<&str>,
    channel: Option<&str>,
) -> bool {
    let (a, p, c) = (AGENTS[row.0], PROJECTS[row.1], CHANNELS[row.2]);
    let agent_ok = agent.is_none_or(|x| a == x);
    let project_ok = match project {
        None => true,
        Some("") => p.is_empty(),
        Some(x) => p == x || p.is_empty(),
    };
    let channel_ok = match channel {
        None | Some("") => true,
        Some(x) => c == x || c.is_empty(),
    };
    agent_ok && project_ok && channel_ok
}

fn pick<'a>(list: &[&'a str], idx: Option<usize>) -> Option<&'a str> {
    idx.map(|i| list[i % list.len()])
}

proptest! {
    #[test]
    fn read_scope_reads_exactly_its_rows(
        rows in prop::collection::vec((0..AGENTS.len(), 0..PROJECTS.len(), 0..CHANNELS.len()), 0..60),
        agent in prop::option::of(0..AGENTS.len()),
        project in prop::option::of(0..PROJECTS.len() + 1),
        channel in prop::option::of(0..CHANNELS.len() + 1),
    ) {
        let conn = table(&rows);
        let (agent, project) = (pick(AGENTS, agent), project.map(|i| ["", "p1", "p2", "p-none"][i]));
        let channel = channel.map(|i| ["", "c1", "c2", "c-none"][i]);
        let scope = Scope::read(agent, project, channel);
        let got = read_ids(&conn, &scope);
        let want: Vec<i64> = rows.iter().enumerate()
            .filter(|(_, row)| expected(**row, agent, project, channel))
            .map(|(id, _)| id as i64)
            .collect();
        prop_assert_eq!(&got, &want);
        // The Rust model agrees with the SQL rendering.
        let model: Vec<i64> = rows.iter().enumerate()
            .filter(|(_, row)| scope.admits(RowAxes {
                agent_id: AGENTS[row.0], project_id: PROJECTS[row.1], channel: CHANNELS[row.2],
            }))
            .map(|(id, _)| id as i64)
            .collect();
        prop_assert_eq!(got, model);
    }

    #[test]
    fn write_visible_scope_matches_its_model(
        rows in prop::collection::vec((0..AGENTS.len(), 0..PROJECTS.len(), 0..CHANNELS.len()), 0..60),
        agent in 0..AGENTS.len(), project in 0..PROJECTS.len(), channel in 0..CHANNELS.len(),
    ) {
        let conn = table(&rows);
        let scope = Scope::write_visible(AGENTS[agent], PROJECTS[project], CHANNELS[channel]);
        let got = read_ids(&conn, &scope);
        let want: Vec<i64> = rows.iter().enumerate()
            .filter(|(_, row)| {
                let (a, p, c) = (AGENTS[row.0], PROJECTS[row.1], CHANNELS[row.2]);
                a == AGENTS[agent]
                    && (p.is_empty() || p == PROJECTS[project])
                    && (c.is_empty() || c == CHANNELS[channel])
            })
            .map(|(id, _)| id as i64)
            .collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn empty_scope_renders_a_true_predicate() {
    let (pred, params) = Scope::read(None, None, None).predicate("");
    assert_eq!(pred, "1");
    assert!(params.is_empty());
}

#[test]
fn empty_agent_fails_closed() {
    let conn = table(&[(0, 0, 0), (1, 1, 1)]);
    assert!(read_ids(&conn, &Scope::read(Some(""), None, None)).is_empty());
}
