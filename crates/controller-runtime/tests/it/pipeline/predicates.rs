//! Table tests of every predicate.

use super::support::*;
use controller_runtime::predicate::PredicateExt;

#[test]
fn change_predicates_filter_updates_only() {
    let gen_of = |g: Option<i64>| {
        let mut d = Deployment::default();
        d.metadata.generation = g;
        d
    };
    // (name, old, new, generation_changed)
    let generation_cases = [
        ("same generation", gen_of(Some(1)), gen_of(Some(1)), false),
        ("bumped generation", gen_of(Some(1)), gen_of(Some(2)), true),
        ("no generation on either", gen_of(None), gen_of(None), false),
        ("generation appears", gen_of(None), gen_of(Some(1)), true),
    ];
    for (name, old, new, want) in generation_cases {
        let got = predicate::GenerationChanged.filter(&Event::Update(update(old, new)));
        assert_eq!(got, want, "generation_changed: {name}");
    }

    let rv_cases = [
        (
            "resync: same rv",
            with_rv(cm("a", "b"), "7"),
            with_rv(cm("a", "b"), "7"),
            false,
        ),
        (
            "real change",
            with_rv(cm("a", "b"), "7"),
            with_rv(cm("a", "b"), "8"),
            true,
        ),
        ("no rv on either", cm("a", "b"), cm("a", "b"), false),
    ];
    for (name, old, new, want) in rv_cases {
        let got = predicate::ResourceVersionChanged.filter(&Event::Update(update(old, new)));
        assert_eq!(got, want, "resource_version_changed: {name}");
    }

    let labelled = |l: Option<BTreeMap<String, String>>| {
        let mut c = cm("a", "b");
        c.metadata.labels = l.clone();
        c.metadata.annotations = l;
        c
    };
    // (name, old labels, new labels, changed)
    let map_cases = [
        ("none -> none", None, None, false),
        ("none -> empty", None, labels(&[]), false),
        ("same", labels(&[("a", "1")]), labels(&[("a", "1")]), false),
        (
            "value changed",
            labels(&[("a", "1")]),
            labels(&[("a", "2")]),
            true,
        ),
        (
            "key added",
            labels(&[("a", "1")]),
            labels(&[("a", "1"), ("b", "1")]),
            true,
        ),
        ("all removed", labels(&[("a", "1")]), None, true),
    ];
    for (name, old, new, want) in map_cases {
        let ev = Event::Update(update(labelled(old), labelled(new)));
        assert_eq!(
            predicate::LabelChanged.filter(&ev),
            want,
            "label_changed: {name}"
        );
        assert_eq!(
            predicate::AnnotationChanged.filter(&ev),
            want,
            "annotation_changed: {name}"
        );
    }

    // Creates, deletes and generic events always pass the change predicates.
    let preds: Vec<predicate::BoxPredicate<ConfigMap>> = vec![
        predicate::boxed(predicate::GenerationChanged),
        predicate::boxed(predicate::ResourceVersionChanged),
        predicate::boxed(predicate::LabelChanged),
        predicate::boxed(predicate::AnnotationChanged),
    ];
    for p in &preds {
        assert!(p.filter(&Event::Create(create(cm("a", "b"), false))));
        assert!(p.filter(&Event::Delete(delete(cm("a", "b")))));
        assert!(p.filter(&Event::Generic(generic(cm("a", "b")))));
    }
}

#[test]
fn label_selector_predicate() {
    let with_labels = |pairs: &[(&str, &str)]| {
        let mut c = cm("a", "b");
        c.metadata.labels = labels(pairs);
        c
    };
    // (selector, labels, matches)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: &[Case] = &[
        ("app=web", &[("app", "web")], true),
        ("app=web", &[("app", "db")], false),
        ("app=web", &[], false),
        ("app!=web", &[], true),
        ("app in (web, api)", &[("app", "api")], true),
        ("app notin (web)", &[("app", "api")], true),
        ("app", &[("app", "")], true),
        ("!app", &[("app", "x")], false),
        ("app=web,tier=front", &[("app", "web")], false),
        ("", &[("anything", "x")], true),
    ];
    for (sel, pairs, want) in cases {
        let p = predicate::LabelSelectorPredicate::parse(sel).unwrap();
        let obj = with_labels(pairs);
        assert_eq!(
            p.filter(&Event::Create(create(obj.clone(), false))),
            *want,
            "{sel:?} create on {pairs:?}"
        );
        assert_eq!(
            p.filter(&Event::Delete(delete(obj.clone()))),
            *want,
            "{sel:?} delete"
        );
        assert_eq!(
            p.filter(&Event::Generic(generic(obj.clone()))),
            *want,
            "{sel:?} generic"
        );
        // Updates look at the new object.
        assert_eq!(
            p.filter(&Event::Update(update(cm("a", "b"), obj))),
            *want,
            "{sel:?} update"
        );
    }

    // A malformed selector is an error when the predicate is built.
    for bad in [
        "app in (web",
        "app in web",
        "=web",
        "app notin",
        "a b",
        "x,,y",
        "app=web)",
    ] {
        let err = predicate::LabelSelectorPredicate::parse(bad);
        assert!(err.is_err(), "{bad:?} should not parse");
        let msg = err.err().unwrap().to_string();
        assert!(msg.contains(bad), "the error names the selector: {msg}");
    }

    // The structured form (a Deployment's spec.selector).
    let structured = metav1::LabelSelector {
        match_labels: labels(&[("app", "web")]),
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: "tier".into(),
            operator: "NotIn".into(),
            values: Some(vec!["db".into()]),
        }]),
    };
    let p = predicate::LabelSelectorPredicate::from_label_selector(&structured).unwrap();
    assert!(p.filter(&Event::Generic(generic(with_labels(&[
        ("app", "web"),
        ("tier", "front")
    ])))));
    assert!(!p.filter(&Event::Generic(generic(with_labels(&[
        ("app", "web"),
        ("tier", "db")
    ])))));
    let bad_op = metav1::LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: "tier".into(),
            operator: "Near".into(),
            values: None,
        }]),
    };
    assert!(predicate::LabelSelectorPredicate::from_label_selector(&bad_op).is_err());
}

#[test]
fn closure_predicates_and_combinators() {
    let yes = || -> predicate::BoxPredicate<ConfigMap> { Arc::new(|_: &Event<ConfigMap>| true) };
    let no = || -> predicate::BoxPredicate<ConfigMap> { Arc::new(|_: &Event<ConfigMap>| false) };
    let ev = Event::Generic(generic(cm("a", "b")));
    // (name, predicate, passes)
    let cases: Vec<(&str, predicate::BoxPredicate<ConfigMap>, bool)> = vec![
        ("closure true", yes(), true),
        ("closure false", no(), false),
        ("and(yes, yes)", predicate::all([yes(), yes()]), true),
        ("and(yes, no)", predicate::all([yes(), no()]), false),
        ("and()", predicate::all([]), true),
        ("or(no, yes)", predicate::any([no(), yes()]), true),
        ("or(no, no)", predicate::any([no(), no()]), false),
        ("or()", predicate::any([]), false),
        ("not(yes)", predicate::boxed(yes().not()), false),
        ("not(no)", predicate::boxed(no().not()), true),
        (
            "not(and(yes, no))",
            predicate::boxed(predicate::all([yes(), no()]).not()),
            true,
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(p.filter(&ev), want, "{name}: generic");
        assert_eq!(
            p.filter(&Event::Create(create(cm("a", "b"), false))),
            want,
            "{name}: create"
        );
        assert_eq!(
            p.filter(&Event::Update(update(cm("a", "b"), cm("a", "b")))),
            want,
            "{name}: update"
        );
        assert_eq!(
            p.filter(&Event::Delete(delete(cm("a", "b")))),
            want,
            "{name}: delete"
        );
    }

    // A closure decides per kind (Go's predicate.Funcs).
    let only_creates = |e: &Event<ConfigMap>| match e {
        Event::Create(_) => true,
        Event::Delete(d) => d.delete_state_unknown,
        Event::Update(_) | Event::Generic(_) => false,
    };
    assert!(only_creates.filter(&Event::Create(create(cm("a", "b"), true))));
    assert!(!only_creates.filter(&Event::Update(update(cm("a", "b"), cm("a", "b")))));
    assert!(!only_creates.filter(&Event::Delete(delete(cm("a", "b")))));
    let unknown = DeleteEvent {
        object: Arc::new(cm("a", "b")),
        delete_state_unknown: true,
    };
    assert!(only_creates.filter(&Event::Delete(unknown)));

    // A filter on the event's object sees the new one for updates (Go's NewPredicateFuncs).
    let named_x = |e: &Event<ConfigMap>| e.object().metadata.name.as_deref() == Some("x");
    assert!(named_x.filter(&Event::Create(create(cm("a", "x"), false))));
    assert!(!named_x.filter(&Event::Create(create(cm("a", "y"), false))));
    assert!(named_x.filter(&Event::Update(update(cm("a", "y"), cm("a", "x")))));
    assert!(!named_x.filter(&Event::Update(update(cm("a", "x"), cm("a", "y")))));
    assert!(named_x.filter(&Event::Delete(delete(cm("a", "x")))));
    assert!(!named_x.filter(&Event::Generic(generic(cm("a", "y")))));
}
