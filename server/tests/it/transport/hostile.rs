//! The transport fuzz's inputs, seeded: random bytes, random JSON, hand-made envelopes (valid
//! and broken notifications, client responses, batches), other methods with odd params, and
//! calls of every advertised tool with hostile values (huge, negative and fractional numbers,
//! deep nesting, long strings, wrong types, unicode oddities), some corrupted on the way
//! (a number beyond f64, a lone surrogate, a raw byte, nesting past any parser's limit, random
//! byte flips inside `params`). Each case says what the server owes it, by construction:
//! an answer carrying its id, an answer with a null id, or none (a notification or response).

use serde_json::{Map, Value, json};

use crate::crash::harness::Rng;

/// What the server owes one case.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expect {
    /// One answer with this id (a result or an error).
    Keyed(Value),
    /// One error answer whose id is null: nothing in the message names a usable id.
    Unkeyed,
    /// A notification: never answered (over HTTP, 202 Accepted).
    Notification,
    /// A notification whose params are no object (MCP names every param): never answered
    /// on stdio; over HTTP, where a status is owed, 400 with the error and a null id.
    OddNotification,
    /// A response from the client: never answered on stdio (over HTTP, a 4xx with a body:
    /// a stateless server has no request it could answer).
    Response,
}

/// One message to send.
pub(crate) struct Case {
    pub(crate) kind: &'static str,
    pub(crate) bytes: Vec<u8>,
    pub(crate) expect: Expect,
}

/// A tool as `tools/list` advertises it.
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) schema: Value,
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

fn chance(rng: &mut Rng, percent: u64) -> bool {
    rng.below(100) < percent
}

/// The id of case `n`: alternately an integer and a string, never reused.
fn id_for(n: usize) -> Value {
    if n.is_multiple_of(2) {
        json!(10_000 + n)
    } else {
        json!(format!("fz-{n}"))
    }
}

fn message(id: &Value, method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// Case `n` of a run over `tools` (valid agent `agent`).
pub(crate) fn next_case(rng: &mut Rng, tools: &[Tool], n: usize) -> Case {
    let id = id_for(n);
    match rng.below(100) {
        0..=9 => random_bytes(rng),
        10..=19 => random_message(rng, &id),
        20..=29 => envelope(rng, &id),
        30..=37 => other_method(rng, &id),
        38..=47 => valid_call(rng, &id, n),
        _ => hostile_call(rng, tools, &id),
    }
}

fn random_bytes(rng: &mut Rng) -> Case {
    let len = 1 + rng.below(200) as usize;
    let mut bytes: Vec<u8> = (0..len)
        .map(|_| match rng.next_u64() as u8 {
            b'\n' => b'x',
            b => b,
        })
        .collect();
    // A first byte that is not white space, so the line is never blank.
    if bytes[0].is_ascii_whitespace() || bytes[0] == b'\r' {
        bytes[0] = b'#';
    }
    Case {
        kind: "random bytes",
        bytes,
        expect: Expect::Unkeyed,
    }
}

const KEYS: &[&str] = &[
    "jsonrpc",
    "method",
    "params",
    "name",
    "arguments",
    "agent_id",
    "content",
    "limit",
    "query",
    "refs",
    "_meta",
    "cursor",
];

const METHODS: &[&str] = &[
    "tools/call",
    "tools/list",
    "ping",
    "initialize",
    "resources/list",
    "prompts/get",
    "no/such/method",
    "",
];

/// A random JSON value; `depth` bounds the nesting.
pub(crate) fn random_json(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(chance(rng, 50)),
        2 => hostile_number(rng),
        3 | 4 => hostile_string(rng),
        5 => json!(*pick(rng, METHODS)),
        6 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_json(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(4) {
                map.insert((*pick(rng, KEYS)).to_owned(), random_json(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// A random top-level value: a scalar or an array (no id to read), or an object whose id is
/// valid (answered with it), of a wrong type (answered with null), or absent with a `jsonrpc`
/// that is not "2.0" (so it is no notification either: answered with null).
fn random_message(rng: &mut Rng, id: &Value) -> Case {
    let mut value = random_json(rng, 3);
    if !value.is_object() {
        return Case {
            kind: "random JSON",
            bytes: value.to_string().into_bytes(),
            expect: Expect::Unkeyed,
        };
    }
    let map = value.as_object_mut().unwrap_or_else(|| unreachable!());
    if chance(rng, 60) {
        map.insert("jsonrpc".into(), json!("2.0"));
    }
    if chance(rng, 50) {
        map.insert("method".into(), json!(*pick(rng, METHODS)));
    }
    let expect = match rng.below(3) {
        0 => {
            map.insert("id".into(), id.clone());
            Expect::Keyed(id.clone())
        }
        1 => {
            let wrong = [
                json!(null),
                json!(true),
                json!(1.5),
                json!([1]),
                json!({"n": 1}),
            ];
            map.insert("id".into(), pick(rng, &wrong).clone());
            Expect::Unkeyed
        }
        _ => {
            map.remove("id");
            map.insert(
                "jsonrpc".into(),
                pick(rng, &[json!("1.0"), json!(2), json!(null)]).clone(),
            );
            Expect::Unkeyed
        }
    };
    Case {
        kind: "random JSON",
        bytes: value.to_string().into_bytes(),
        expect,
    }
}

/// Hand-made envelopes whose answer JSON-RPC fixes.
fn envelope(rng: &mut Rng, id: &Value) -> Case {
    let (text, expect): (Value, Expect) = match rng.below(12) {
        0 => (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Expect::Notification,
        ),
        1 => (
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}),
            Expect::Notification,
        ),
        // A notification naming a tool must run nothing.
        2 => (
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "store",
                "arguments": {"agent_id": "fz", "content": "sent as a notification"}}}),
            Expect::Notification,
        ),
        3 => (
            json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": [1, 2]}),
            Expect::OddNotification,
        ),
        4 => (
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            Expect::Response,
        ),
        5 => (
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "client"}}),
            Expect::Response,
        ),
        6 => (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"}),
            Expect::Unkeyed,
        ),
        7 => (json!([]), Expect::Unkeyed),
        8 => (
            json!([{"jsonrpc": "2.0", "id": id, "method": "ping"}]),
            Expect::Unkeyed,
        ),
        9 => (
            json!({"jsonrpc": "2.0", "id": id, "result": {}, "error": {"code": 1, "message": "x"}}),
            Expect::Unkeyed,
        ),
        10 => (
            json!({"jsonrpc": "2.0", "id": id, "method": "ping", "params": 5}),
            Expect::Keyed(id.clone()),
        ),
        _ => (
            json!({"jsonrpc": "2.0", "id": id}),
            Expect::Keyed(id.clone()),
        ),
    };
    Case {
        kind: "envelope",
        bytes: text.to_string().into_bytes(),
        expect,
    }
}

/// A request for a method other than `tools/call`, with params right, odd or wrong.
fn other_method(rng: &mut Rng, id: &Value) -> Case {
    let method = *pick(rng, METHODS);
    let params = match rng.below(5) {
        0 => json!({}),
        1 => json!([]),
        2 => json!({"cursor": random_json(rng, 2), "_meta": random_json(rng, 2)}),
        3 => json!({"protocolVersion": random_json(rng, 1), "capabilities": random_json(rng, 1),
                    "clientInfo": {"name": "fz", "version": "0"}}),
        _ => random_json(rng, 2),
    };
    let params = if params.is_object() || params.is_array() {
        params
    } else {
        json!({})
    };
    Case {
        kind: "other method",
        bytes: message(id, method, params),
        expect: Expect::Keyed(id.clone()),
    }
}

/// A call the server should serve: so the run also writes and reads, and refused calls have
/// rows they could have damaged.
fn valid_call(rng: &mut Rng, id: &Value, n: usize) -> Case {
    let (tool, args) = match rng.below(4) {
        0 | 1 => (
            "store",
            json!({"agent_id": "fz", "content": format!("fuzz note {n}: the {} is {}", hostile_word(rng), hostile_word(rng))}),
        ),
        2 => (
            "recall",
            json!({"agent_id": "fz", "query": hostile_word(rng), "limit": 1 + rng.below(20)}),
        ),
        _ => ("list_memories", json!({"agent_id": "fz", "limit": 5})),
    };
    Case {
        kind: "valid call",
        bytes: message(id, "tools/call", json!({"name": tool, "arguments": args})),
        expect: Expect::Keyed(id.clone()),
    }
}

const WORDS: &[&str] = &[
    "kettle", "harbour", "violet", "granite", "lantern", "orchard",
];

fn hostile_word(rng: &mut Rng) -> &'static str {
    let word: &&'static str = pick(rng, WORDS);
    word
}

/// Numbers that sit on or past every edge: integer limits, f64 extremes, fractions, -0.
pub(crate) fn hostile_number(rng: &mut Rng) -> Value {
    let pool = [
        json!(u64::MAX),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(-1),
        json!(0),
        json!(1),
        json!(100),
        json!(4_294_967_296u64),
        json!(9_007_199_254_740_993u64),
        json!(1e300),
        json!(-1e300),
        json!(1.5),
        json!(-0.0),
        json!(1e-300),
        json!(f64::MAX),
    ];
    pick(rng, &pool).clone()
}

/// Strings that are long, empty, control-laden or unicode-odd (never a lone surrogate:
/// `serde_json` cannot hold one; the corruptions write that by hand).
pub(crate) fn hostile_string(rng: &mut Rng) -> Value {
    let pool = [
        "",
        "a",
        "fz",
        "mem:1",
        "mem:-1",
        "mem:99999999999999999999",
        "ep:0",
        "\0",
        "a\u{0}b",
        "\u{202E}right-to-left",
        "zero\u{200B}width",
        "e\u{301}\u{301}\u{301}",
        "\u{FEFF}bom",
        "\u{FFFF}\u{FFFE}",
        "\u{10FFFF}",
        "😀👩‍👩‍👧‍👦",
        "日本語のテキスト",
        "\u{1}\u{7}\u{1b}[31m\u{7f}",
        "../../etc/passwd",
        "/etc/passwd",
        "' OR 1=1 --",
        "\"quoted\" AND NEAR( * ^ :",
        "2026-02-30T25:61:61Z",
        "-999999-01-01",
        "recent",
    ];
    let mut s = (*pick(rng, &pool)).to_owned();
    if chance(rng, 8) {
        let most = if chance(rng, 10) { 40_000 } else { 400 };
        let times = 1 + rng.below(most) as usize;
        s = s.repeat(times.min(200_000 / s.len().max(1)));
    }
    json!(s)
}

/// Arrays nested `depth` deep (below the parser's limit: they parse, the schema judges).
fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!([v]);
    }
    v
}

fn hostile_value(rng: &mut Rng, prop: &Value) -> Value {
    match rng.below(10) {
        0 | 1 => hostile_number(rng),
        2 | 3 => hostile_string(rng),
        4 => pick(
            rng,
            &[
                json!(null),
                json!(true),
                json!([]),
                json!({}),
                json!([1, "a"]),
            ],
        )
        .clone(),
        5 => nested(1 + rng.below(100) as usize),
        6 => random_json(rng, 3),
        _ => plausible(rng, prop),
    }
}

/// A value of the property's own type, small and often valid.
fn plausible(rng: &mut Rng, prop: &Value) -> Value {
    let ty = match &prop["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => ts
            .iter()
            .find_map(|t| t.as_str().filter(|t| *t != "null"))
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" => json!(prop["minimum"].as_i64().unwrap_or(0) + rng.below(5) as i64),
        "number" => json!(0.5),
        "boolean" => json!(chance(rng, 50)),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!(*pick(rng, &["fz", "mem:1", "ep:1", "recent", "kettle"])),
    }
}

/// A call of a random advertised tool with hostile arguments, sometimes corrupted as text.
fn hostile_call(rng: &mut Rng, tools: &[Tool], id: &Value) -> Case {
    let tool = pick(rng, tools);
    let empty = Map::new();
    let props = tool.schema["properties"].as_object().unwrap_or(&empty);
    let mut args = Map::new();
    for (name, prop) in props {
        if chance(rng, 60) {
            let value = if name == "agent_id" && chance(rng, 70) {
                json!("fz")
            } else {
                hostile_value(rng, prop)
            };
            args.insert(name.clone(), value);
        }
    }
    if chance(rng, 10) {
        args.insert("zz_unknown".into(), random_json(rng, 1));
    }
    let mut bytes = message(
        id,
        "tools/call",
        json!({"name": tool.name, "arguments": args}),
    );
    let mut kind = "hostile call";
    if chance(rng, 35) {
        kind = corrupt(rng, &mut bytes, props);
    }
    Case {
        kind,
        bytes,
        expect: Expect::Keyed(id.clone()),
    }
}

/// Corrupts a serialized call inside its `arguments` (or `params`): the envelope's id,
/// `jsonrpc` and `method` stay intact, so the answer must still carry the id.
fn corrupt(rng: &mut Rng, bytes: &mut Vec<u8>, props: &Map<String, Value>) -> &'static str {
    let Some(at) = find(bytes, b"\"arguments\":{").map(|i| i + b"\"arguments\":{".len()) else {
        return "hostile call";
    };
    let number_arg = props
        .iter()
        .find(|(_, p)| p["type"] == "integer" || p["type"] == "number")
        .map_or("zz", |(name, _)| name.as_str());
    let (kind, insert): (&'static str, Vec<u8>) = match rng.below(5) {
        0 => (
            "number beyond f64",
            format!(
                "\"{number_arg}\":{},",
                pick(rng, &["1e309", "-1e999", "1E400"])
            )
            .into_bytes(),
        ),
        1 => ("lone surrogate", br#""zz":"a \udc00 b","#.to_vec()),
        2 => ("raw byte", b"\"zz\":\"\xff\xc0\xfe\",".to_vec()),
        3 => {
            let depth = 200 + rng.below(20_000) as usize;
            (
                "nesting past the limit",
                format!("\"zz\":{}{},", "[".repeat(depth), "]".repeat(depth)).into_bytes(),
            )
        }
        _ => {
            let Some(start) = find(bytes, b"\"params\":").map(|i| i + b"\"params\":".len()) else {
                return "hostile call";
            };
            for _ in 0..1 + rng.below(3) {
                let span = bytes.len() - start;
                let pos = start + rng.below(span as u64) as usize;
                let byte = match rng.next_u64() as u8 {
                    b'\n' => b'}',
                    b => b,
                };
                match rng.below(3) {
                    0 => bytes[pos] = byte,
                    1 => bytes.insert(pos, byte),
                    _ if bytes.len() > start + 1 => {
                        bytes.remove(pos);
                    }
                    _ => {}
                }
            }
            return "byte flips in params";
        }
    };
    bytes.splice(at..at, insert);
    kind
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
