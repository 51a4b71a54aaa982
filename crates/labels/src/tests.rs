//! Table tests of the label selector syntax and matching, and property tests of printing.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::{LabelSelector, MatchExpression, Operator, ParseError, Requirement};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(s: &str) -> Result<LabelSelector, ParseError> {
    s.parse()
}

#[test]
fn every_operator_matches_as_upstream() {
    let set = labels(&[("app", "web"), ("tier", "front"), ("n", "5"), ("empty", "")]);
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("app!=web", false),
        ("missing!=x", true),
        ("missing=x", false),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("missing in (x)", false),
        ("app notin (db)", true),
        ("app notin (web)", false),
        ("missing notin (x)", true),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("n>4", true),
        ("n>5", false),
        ("n<6", true),
        ("n<5", false),
        ("n>0", true),
        ("app>1", false),
        ("missing<100", false),
        ("empty=", true),
        ("empty in ()", true),
        ("app=", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("app=web , tier in (front) , !missing", true),
        ("\tapp\n=\rweb", true),
        ("app in (in)", false),
        ("x notin (notin)", true),
    ];
    for (sel, want) in cases {
        let s = parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        assert_eq!(s.matches(&set), *want, "{sel:?}");
    }
}

#[test]
fn upstream_parse_cases() {
    // apimachinery's TestSelectorParse: good strings print back without their spaces.
    for good in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ] {
        let s = parse(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        assert_eq!(s.to_string(), good.replace(' ', ""), "{good:?}");
    }
    for bad in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
        assert!(parse(bad).is_err(), "{bad:?} should not parse");
    }
    // Deterministic: requirement order does not matter.
    assert_eq!(parse("x=a,a=x").unwrap(), parse("a=x,x=a").unwrap());
    assert!(
        parse("notin=in")
            .unwrap()
            .matches(&labels(&[("notin", "in")]))
    );
    let s = parse("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)").unwrap();
    assert_eq!(
        s.requirements()[0].values(),
        ["10.10.100.1", "tick.tack.clock"]
    );
    assert!(parse(&"a".repeat(254)).is_err());
}

#[test]
fn parses_into_requirements() {
    let s = parse("x in (foo,,baz),y,z notin ()").unwrap();
    let r = s.requirements();
    assert_eq!(r.len(), 3);
    assert_eq!((r[0].key(), r[0].operator()), ("x", Operator::In));
    assert_eq!(r[0].values(), ["", "baz", "foo"]);
    assert_eq!((r[1].key(), r[1].operator()), ("y", Operator::Exists));
    assert_eq!((r[2].key(), r[2].operator()), ("z", Operator::NotIn));
    assert_eq!(r[2].values(), [""]);
    assert_eq!(s.to_string(), "x in (,baz,foo),y,z notin ()");
    let s = parse("example.com/a!=b,a>1,b<2,c==d").unwrap();
    assert_eq!(s.to_string(), "a>1,b<2,c==d,example.com/a!=b");
    assert_eq!(
        parse("a in (x,),b in (,x)").unwrap().to_string(),
        "a in (,x),b in (,x)"
    );
    assert_eq!(parse("in in (in)").unwrap().to_string(), "in in (in)");
    assert_eq!(parse("a=b").unwrap().requires_exact_match("a"), Some("b"));
    assert_eq!(
        parse("a in (b)").unwrap().requires_exact_match("a"),
        Some("b")
    );
    assert_eq!(parse("a in (b,c)").unwrap().requires_exact_match("a"), None);
    assert!(parse("  ").unwrap().is_everything());
    assert!(LabelSelector::everything().matches(&labels(&[])));
}

#[test]
fn malformed_selectors_are_errors() {
    let cases: &[(&str, &str)] = &[
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        (
            "x in",
            "unable to parse requirement: found '', expected: '('",
        ),
        (
            "x in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        (
            "x in (a",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "x in (a b)",
            "unable to parse requirement: found 'b', expected: ',' or ')'",
        ),
        (
            "x in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "x y",
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "x=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "=x",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        ("x,", "found '', expected: identifier after ','"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (
            ",x",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        ("!x=y", "found '=', expected: ',' or 'end of string'"),
        (
            "x>a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x>",
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("x in ()y", "found 'y', expected: ',' or 'end of string'"),
        (
            "x)",
            "unable to parse requirement: found ')', expected: in, notin, =, ==, !=, gt, lt",
        ),
    ];
    for (sel, msg) in cases {
        let e = parse(sel).unwrap_err();
        assert_eq!(e.to_string(), *msg, "{sel:?}");
        assert!(e.position().is_some());
    }
    // Key and value validation.
    for sel in [
        "-x=a",
        "x=-a",
        "x/y/z",
        "/x",
        "x in (a,-b)",
        "Foo.com/x",
        "é=1",
        "x=é",
        // As upstream, a negative bound is not a valid label value.
        "n>-1",
        &format!("{}=a", "k".repeat(64)),
        &format!("k={}", "v".repeat(64)),
    ] {
        let e = parse(sel).unwrap_err();
        assert!(e.to_string().contains("Invalid value"), "{sel:?} gave {e}");
    }
    let e = parse("a b=c").unwrap_err();
    assert_eq!(e.position(), Some(0));
    let e = parse("ok=1, x in (a").unwrap_err();
    assert_eq!(e.position(), Some(6));
}

#[test]
fn structured_form() {
    let s = LabelSelector::from_parts(
        [("b", "2"), ("a", "1")],
        [
            MatchExpression {
                key: "c".into(),
                operator: "Exists".into(),
                values: vec![],
            },
            MatchExpression {
                key: "d".into(),
                operator: "DoesNotExist".into(),
                values: vec![],
            },
            MatchExpression {
                key: "e".into(),
                operator: "In".into(),
                values: vec!["y".into(), "x".into()],
            },
        ],
    )
    .unwrap();
    assert_eq!(s.to_string(), "a=1,b=2,c,!d,e in (x,y)");
    let no_labels: [(&str, &str); 0] = [];
    let bad = |op: &str, values: Vec<String>| {
        LabelSelector::from_parts(
            no_labels,
            [MatchExpression {
                key: "k".into(),
                operator: op.into(),
                values,
            }],
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        bad("Gt", vec!["1".into()]),
        "\"Gt\" is not a valid label selector operator"
    );
    assert!(bad("In", vec![]).contains("values set can't be empty"));
    assert!(bad("Exists", vec!["x".into()]).contains("values set must be empty"));
    assert!(LabelSelector::from_parts([("k", "bad value")], Vec::new()).is_err());
    assert!(
        LabelSelector::from_parts(no_labels, Vec::new())
            .unwrap()
            .is_everything()
    );
}

fn key_strategy() -> impl Strategy<Value = String> {
    (
        prop::option::of("[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z]{1,5})?"),
        "[A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?",
    )
        .prop_map(|(p, n)| match p {
            Some(p) => format!("{p}/{n}"),
            None => n,
        })
}

fn value_strategy() -> impl Strategy<Value = String> {
    "(([A-Za-z0-9][A-Za-z0-9_.-]{0,8})?[A-Za-z0-9])?"
}

fn requirement_strategy() -> impl Strategy<Value = Requirement> {
    (
        key_strategy(),
        0..9usize,
        prop::collection::vec(value_strategy(), 1..4),
        any::<u32>(),
    )
        .prop_map(|(k, op, vals, n)| {
            let one = vec![vals[0].clone()];
            let (op, vals) = match op {
                0 => (Operator::In, vals),
                1 => (Operator::NotIn, vals),
                2 => (Operator::Equals, one),
                3 => (Operator::DoubleEquals, one),
                4 => (Operator::NotEquals, one),
                5 => (Operator::Exists, vec![]),
                6 => (Operator::DoesNotExist, vec![]),
                7 => (Operator::GreaterThan, vec![n.to_string()]),
                _ => (Operator::LessThan, vec![n.to_string()]),
            };
            Requirement::new(&k, op, vals).expect("strategy builds valid requirements")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn display_then_parse_round_trips(reqs in prop::collection::vec(requirement_strategy(), 0..5)) {
        let sel = LabelSelector::from_requirements(reqs);
        let printed = sel.to_string();
        let reparsed: LabelSelector = printed.parse().map_err(|e| TestCaseError::fail(format!("{printed:?}: {e}")))?;
        prop_assert_eq!(&reparsed, &sel);
        prop_assert_eq!(reparsed.to_string(), printed);
    }

    #[test]
    fn arbitrary_input_never_panics(s in "[a-z!=<>(), \t.\\-/0-9é]{0,24}") {
        if let Ok(sel) = s.parse::<LabelSelector>() {
            // Whatever parses prints to something that parses to the same selector.
            let again: LabelSelector = sel.to_string().parse().unwrap();
            prop_assert_eq!(again, sel);
        }
        if let Ok(sel) = s.parse::<crate::FieldSelector>() {
            let again: crate::FieldSelector = sel.to_string().parse().unwrap();
            prop_assert_eq!(again, sel);
        }
    }

    #[test]
    fn field_selector_round_trips(terms in prop::collection::vec(("[a-z.]{0,6}", any::<bool>(), "[a-z,=\\\\!]{0,6}"), 0..4)) {
        let sel = crate::FieldSelector::from_requirements(terms.into_iter().map(|(f, ne, v)| crate::FieldRequirement {
            field: f,
            operator: if ne { crate::FieldOperator::NotEquals } else { crate::FieldOperator::Equals },
            value: v,
        }));
        let printed = sel.to_string();
        let again: crate::FieldSelector = printed.parse().map_err(|e| TestCaseError::fail(format!("{printed:?}: {e}")))?;
        prop_assert_eq!(again, sel);
    }
}
