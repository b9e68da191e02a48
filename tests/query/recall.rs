//! Evidence recall of query_session's assembled context on the QA fixture
//! (real and generated pi sessions plus large synthetic ones): the evidence
//! entry must be in the context for at least 90% of questions within 8000
//! tokens, abandoned-branch entries never, and offline answers cite only
//! entries of the context.

use std::sync::OnceLock;

const BUDGET: usize = 8000;

fn results() -> &'static [crate::support::qa::Scored] {
    static RESULTS: OnceLock<Vec<crate::support::qa::Scored>> = OnceLock::new();
    RESULTS.get_or_init(|| crate::support::qa::run_all(BUDGET))
}

#[test]
fn assembled_context_holds_the_evidence_for_nine_in_ten_questions() {
    let results = results();
    assert!(results.len() >= 50, "fixture too small: {}", results.len());
    let hits = results.iter().filter(|r| r.hit).count();
    let recall = hits as f64 / results.len() as f64;
    let misses: Vec<&str> = results
        .iter()
        .filter(|r| !r.hit)
        .map(|r| r.id.as_str())
        .collect();
    eprintln!(
        "evidence recall {hits}/{} = {:.1}% (misses: {misses:?})",
        results.len(),
        recall * 100.0
    );
    assert!(
        recall >= 0.9,
        "recall {recall:.3} below 0.9; misses: {misses:?}"
    );
    for r in results.iter() {
        assert!(
            r.context_tokens <= BUDGET,
            "{}: {} tokens over the budget",
            r.id,
            r.context_tokens
        );
    }
}

#[test]
fn abandoned_branch_entries_never_reach_the_context_or_citations() {
    let results = results();
    let guarded: Vec<_> = results
        .iter()
        .filter(|r| r.id.starts_with("gen-branch") || r.id.starts_with("gen-nosummary"))
        .collect();
    assert_eq!(guarded.len(), 4);
    for r in results.iter() {
        assert!(
            r.forbidden_in_context.is_empty(),
            "{}: abandoned entries in context: {:?}",
            r.id,
            r.forbidden_in_context
        );
        assert!(
            r.offline_cites_unknown.is_empty(),
            "{}: offline cites entries outside the context: {:?}",
            r.id,
            r.offline_cites_unknown
        );
    }
}

#[test]
fn offline_answers_cite_the_evidence_entry() {
    let results = results();
    let cited = results.iter().filter(|r| r.offline_cites_evidence).count();
    let rate = cited as f64 / results.len() as f64;
    let misses: Vec<&str> = results
        .iter()
        .filter(|r| !r.offline_cites_evidence)
        .map(|r| r.id.as_str())
        .collect();
    eprintln!(
        "offline answers citing the evidence: {cited}/{} = {:.1}% (misses: {misses:?})",
        results.len(),
        rate * 100.0
    );
    assert!(
        rate >= 0.75,
        "offline citation rate {rate:.3}; misses: {misses:?}"
    );
}

#[test]
fn small_budgets_are_respected_and_keep_the_newest_turn() {
    let (questions, specs) = crate::support::qa::load_fixture();
    let tmp = tempfile::tempdir().unwrap();
    let paths = crate::support::qa::session_paths(&specs, tmp.path());
    let spec = &specs[0];
    let synthetic =
        session_index::session::open(&paths[&format!("synthetic:{}", spec.name)]).unwrap();
    let newest_user = crate::support::qa::synthetic_id(spec.turns - 1, 1);
    for budget in [500, 1000, 2000, 8000] {
        for q in questions
            .iter()
            .filter(|q| q.session.starts_with("synthetic:"))
            .take(3)
        {
            let prepared = session_index::features::query::prepare(
                &synthetic,
                None,
                None,
                &q.question,
                budget,
            )
            .unwrap();
            let a = &prepared.assembled;
            assert!(
                a.tokens <= budget,
                "{}: {} tokens > {budget}",
                q.id,
                a.tokens
            );
            assert_eq!(
                a.tokens,
                session_index::features::query::estimate_tokens(&a.text)
            );
            if budget >= 2000 {
                assert!(
                    a.entry_ids.contains(&newest_user),
                    "{}: newest turn missing at {budget}",
                    q.id
                );
            }
            // Every id in the text is a real entry of the session's branch.
            for id in &a.entry_ids {
                assert!(synthetic.get(id).is_some(), "{id} is not an entry");
            }
        }
    }
}
