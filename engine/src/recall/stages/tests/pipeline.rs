//! The whole pure pass on a small fixed input: the golden later changes must state they move.

use std::collections::HashMap;

use expect_test::{Expect, expect};

use crate::recall::stages::candidate::{Arm, ArmHit, ArmList};
use crate::recall::stages::confidence::{ConfidenceInput, confidence};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::shape::Hydrated;
use crate::recall::{RecallRequest, run};
use crate::refs::Ref;

fn corpus() -> HashMap<Ref, String> {
    let long = format!(
        "{}Later that week the cloudflared tunnel was moved to the new host. {}",
        "Routine notes about the office plants and the coffee machine. ".repeat(9),
        "More routine notes follow. ".repeat(4)
    );
    HashMap::from([
        (
            Ref::mem(1),
            "Deployed the cloudflared tunnel for the staging API.".to_owned(),
        ),
        (
            Ref::mem(2),
            "The tunnel config lives in /etc/cloudflared/config.yml".to_owned(),
        ),
        (Ref::mem(3), long),
        (
            Ref::ep(1),
            "[Episode] Set up remote access for staging".to_owned(),
        ),
        (Ref::mem(4), "Unrelated: the cat sat on the mat.".to_owned()),
    ])
}

fn arms() -> Vec<ArmList> {
    vec![
        ArmList::ranked(
            Arm::VectorNear,
            [
                (Ref::mem(1), Some(0.82)),
                (Ref::ep(1), Some(0.55)),
                (Ref::mem(4), Some(0.18)),
                (Ref::mem(2), Some(0.31)),
            ],
        ),
        ArmList {
            arm: Arm::EpisodeFts,
            hits: vec![ArmHit::from_bm25(Ref::ep(1), 0, -2.5)],
        },
        ArmList::ranked(
            Arm::MemoryKeyword,
            [
                (Ref::mem(2), Some(4.1)),
                (Ref::mem(3), Some(3.2)),
                (Ref::mem(1), Some(1.0)),
                (Ref::mem(99), Some(0.5)),
            ],
        ),
    ]
}

fn check(config: &RecallConfig, limit: usize, expect: Expect) {
    let rows = corpus();
    let request = RecallRequest {
        query: "cloudflared tunnel",
        limit,
        deep: false,
        full_content: false,
    };
    let gate = GateInput {
        calibrated: Some(0.3),
        pool: 600,
        deep: false,
    };
    let outcome = run(
        config,
        &request,
        arms(),
        &gate,
        |r| {
            rows.get(&r).map(|content| Hydrated {
                content: content.clone(),
                ..Hydrated::default()
            })
        },
        |c| {
            Some(confidence(
                &config.confidence,
                &ConfidenceInput {
                    cosine: c.cosine,
                    age_hours: Some(12.0),
                    time_range_hours: 48.0,
                    ..Default::default()
                },
            ))
        },
    );
    let mut text = serde_json::to_string_pretty(&outcome.response).expect("json");
    text.push_str("\n--\n");
    for decision in &outcome.stages.gate.decisions {
        text.push_str(&format!(
            "{} {:?} {:?}\n",
            decision.r#ref, decision.reason, decision.cosine
        ));
    }
    text.push_str(&format!(
        "cut_by_count {:?} vanished {:?}\n",
        outcome
            .stages
            .order
            .cut_by_count
            .iter()
            .map(Ref::to_string)
            .collect::<Vec<_>>(),
        outcome
            .stages
            .vanished
            .iter()
            .map(Ref::to_string)
            .collect::<Vec<_>>()
    ));
    expect.assert_eq(&text);
}

#[test]
fn fused_gated_shaped_rrf() {
    check(
        &RecallConfig::default(),
        3,
        expect![[r#"
        {
          "messages": [
            {
              "content": "The tunnel config lives in /etc/cloudflared/config.yml",
              "ref": "mem:2",
              "score": 0.032018,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.31,
                "score": 0.4344
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.31,
                "cosine": 0.31,
                "rrf": 0.032018,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 3
                  },
                  {
                    "arm": "memory_keyword",
                    "rank": 0
                  }
                ]
              }
            },
            {
              "content": "Deployed the cloudflared tunnel for the staging API.",
              "ref": "mem:1",
              "score": 0.032266,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.82,
                "score": 0.9713
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.82,
                "cosine": 0.82,
                "rrf": 0.032266,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 0
                  },
                  {
                    "arm": "memory_keyword",
                    "rank": 2
                  }
                ]
              }
            },
            {
              "content": "[Episode] Set up remote access for staging",
              "ref": "ep:1",
              "score": 0.032522,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.55,
                "score": 0.7748
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.55,
                "cosine": 0.55,
                "rrf": 0.032522,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 1
                  },
                  {
                    "arm": "episode_fts",
                    "rank": 0
                  }
                ]
              }
            }
          ],
          "depth": 50
        }
        --
        ep:1 CosineAbove Some(0.55)
        mem:1 CosineAbove Some(0.82)
        mem:2 CosineAbove Some(0.31)
        mem:3 LexicalNoCosine None
        mem:4 BelowGate Some(0.18)
        mem:99 LexicalNoCosine None
        cut_by_count ["mem:3", "mem:99"] vanished []
    "#]],
    );
}

#[test]
fn fused_gated_shaped_rsf() {
    let config = RecallConfig {
        fusion: crate::recall::stages::fusion::FusionMode::Rsf,
        ..RecallConfig::default()
    };
    check(
        &config,
        10,
        expect![[r#"
        {
          "messages": [
            {
              "content": "Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Routine notes about the office plants and the coffee machine. Rout",
              "ref": "mem:3",
              "score": 0.25,
              "confidence": {
                "age_hours": 12.0,
                "score": 0.9713
              },
              "match_reason": {
                "signal": "rsf",
                "score": 0.25,
                "rsf": 0.25,
                "arms": [
                  {
                    "arm": "memory_keyword",
                    "rank": 1
                  }
                ]
              },
              "content_truncated": true,
              "content_len": 732,
              "excerpt": "Later that week the cloudflared tunnel was moved to the new host. ",
              "excerpt_basis": "lexical"
            },
            {
              "content": "Deployed the cloudflared tunnel for the staging API.",
              "ref": "mem:1",
              "score": 0.37963,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.82,
                "score": 0.9713
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.82,
                "cosine": 0.82,
                "rsf": 0.37963,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 0
                  },
                  {
                    "arm": "memory_keyword",
                    "rank": 2
                  }
                ]
              }
            },
            {
              "content": "The tunnel config lives in /etc/cloudflared/config.yml",
              "ref": "mem:2",
              "score": 0.401042,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.31,
                "score": 0.4344
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.31,
                "cosine": 0.31,
                "rsf": 0.401042,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 3
                  },
                  {
                    "arm": "memory_keyword",
                    "rank": 0
                  }
                ]
              }
            },
            {
              "content": "[Episode] Set up remote access for staging",
              "ref": "ep:1",
              "score": 0.526042,
              "confidence": {
                "age_hours": 12.0,
                "cosine": 0.55,
                "score": 0.7748
              },
              "match_reason": {
                "signal": "cosine",
                "score": 0.55,
                "cosine": 0.55,
                "rsf": 0.526042,
                "arms": [
                  {
                    "arm": "vector_near",
                    "rank": 1
                  },
                  {
                    "arm": "episode_fts",
                    "rank": 0
                  }
                ]
              }
            }
          ],
          "depth": 50
        }
        --
        ep:1 CosineAbove Some(0.55)
        mem:2 CosineAbove Some(0.31)
        mem:1 CosineAbove Some(0.82)
        mem:3 LexicalNoCosine None
        mem:4 BelowGate Some(0.18)
        mem:99 LexicalNoCosine None
        cut_by_count [] vanished ["mem:99"]
    "#]],
    );
}

#[test]
fn limit_zero_returns_nothing_and_considers_the_same_candidates() {
    let rows = corpus();
    let config = RecallConfig::default();
    let gate = GateInput {
        calibrated: Some(0.3),
        pool: 600,
        deep: false,
    };
    let considered = |limit| {
        let request = RecallRequest {
            query: "cloudflared tunnel",
            limit,
            deep: false,
            full_content: false,
        };
        let outcome = run(
            &config,
            &request,
            arms(),
            &gate,
            |r| {
                rows.get(&r).map(|c| Hydrated {
                    content: c.clone(),
                    ..Hydrated::default()
                })
            },
            |_| None,
        );
        (
            outcome.response.messages.len(),
            outcome
                .stages
                .fusion
                .iter()
                .map(|c| c.r#ref)
                .collect::<Vec<_>>(),
        )
    };
    let (n0, ids0) = considered(0);
    let (n5, ids5) = considered(5);
    // Five rows pass the gate; mem:99 is gone from the store, so four come back.
    assert_eq!((n0, n5), (0, 4));
    assert_eq!(ids0, ids5);
}

mod invariant {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{arms, corpus};
    use crate::recall::stages::config::RecallConfig;
    use crate::recall::stages::gate::GateInput;
    use crate::recall::stages::shape::Hydrated;
    use crate::recall::{RecallRequest, run};
    use crate::refs::Ref;

    fn considered(limit: usize, config: &RecallConfig) -> BTreeSet<Ref> {
        let rows = corpus();
        let request = RecallRequest {
            query: "tunnel",
            limit,
            deep: false,
            full_content: false,
        };
        let gate = GateInput {
            calibrated: None,
            pool: 10,
            deep: false,
        };
        let outcome = run(
            config,
            &request,
            arms(),
            &gate,
            |r| {
                rows.get(&r).map(|c| Hydrated {
                    content: c.clone(),
                    ..Hydrated::default()
                })
            },
            |_| None,
        );
        outcome.stages.fusion.iter().map(|c| c.r#ref).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Through the whole pass: the fused candidate set depends on the depth, never on `limit`.
        #[test]
        fn limit_never_changes_what_fusion_considers(a in 0usize..=100, b in 0usize..=100, floor in 1usize..4) {
            let config = RecallConfig {
                depth: crate::recall::stages::select::RecallDepth::new(floor, floor + 1, 10).expect("valid"),
                ..RecallConfig::default()
            };
            prop_assert_eq!(considered(a, &config), considered(b, &config));
        }
    }
}
