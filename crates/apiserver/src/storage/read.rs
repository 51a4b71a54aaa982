//! Reads: get, and list with selectors, resourceVersion semantics and consistent pagination
//! (every page of a list comes from the snapshot of its first page).

use std::ops::Bound;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use super::commit::current;
use super::convert::to_version;
use super::options::ListOptions;
use super::scale;
use super::select::Selection;
use super::store::obj_key;
use super::store::{Data, ObjKey, State, res_key};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::{FieldError, invalid_kind};

/// The message of a continue token whose list's resourceVersion was compacted, as the real
/// server's etcd store words it; the 410 carries a token to list the rest at the latest
/// resourceVersion.
pub(crate) const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The resourceVersion of a continue token that lists the rest at the latest one (the token
/// of an [`INCONSISTENT_CONTINUE`] answer), as upstream encodes it.
const LATEST: i64 = -1;

/// GET.
pub(crate) fn get(
    st: &State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
) -> Result<Value, ApiError> {
    get_shared(st, res, namespace, name, subresource).map(Arc::unwrap_or_clone)
}

/// GET, answering the stored object itself (not a copy) when the request speaks the stored
/// version: the HTTP layer only encodes it.
pub(crate) fn get_shared(
    st: &State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
) -> Result<Arc<Value>, ApiError> {
    let key = obj_key(res, namespace, name);
    let obj = current(st, res, &key, subresource)?;
    if subresource == Some("scale") {
        return Ok(Arc::new(scale::to_scale(res, &obj)));
    }
    Ok(super::convert::to_version_shared(&obj, &res.api_version()))
}

/// The current objects of a collection that the selectors select, shared with the store (not
/// copied) when stored at the resource's version: in-process controllers that scan many
/// objects read them without a copy each.
pub(crate) fn list_shared(
    st: &State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    label_selector: Option<&str>,
    field_selector: Option<&str>,
) -> Result<Vec<Arc<Value>>, ApiError> {
    let sel = Selection::parse(res, namespace, label_selector, field_selector)?;
    let api_version = res.api_version();
    let Some(objs) = st.data.get(&res_key(res)) else {
        return Ok(Vec::new());
    };
    let (lower, upper) = match &sel.namespace {
        Some(ns) => (
            Bound::Included((ns.clone(), String::new())),
            Bound::Excluded((format!("{ns}\u{0}"), String::new())),
        ),
        None => (Bound::Unbounded, Bound::Unbounded),
    };
    Ok(objs
        .range((lower, upper))
        .filter(|(_, obj)| sel.matches(obj))
        .map(|(_, obj)| super::convert::to_version_shared(obj, &api_version))
        .collect())
}

/// The objects of `res` whose ownerReferences name `owner_uid`, from the owner index (no
/// scan), shared with the store.
pub(crate) fn owned_shared(st: &State, res: &ResourceInfo, owner_uid: &str) -> Vec<Arc<Value>> {
    let rk = res_key(res);
    let api_version = res.api_version();
    let mut owned: Vec<(ObjKey, Arc<Value>)> = st
        .dependents_of(owner_uid)
        .iter()
        .filter_map(|uid| st.by_uid(uid))
        .filter(|(loc, _)| loc.res == rk)
        .map(|(loc, obj)| {
            (
                loc.key,
                super::convert::to_version_shared(&obj, &api_version),
            )
        })
        .collect();
    owned.sort_by(|a, b| a.0.cmp(&b.0));
    owned.into_iter().map(|(_, obj)| obj).collect()
}

/// A decoded continue token.
#[derive(Debug)]
struct Continue {
    /// The list's resourceVersion, `None` for the latest.
    rv: Option<u64>,
    after: ObjKey,
    progress: Progress,
}

/// How far a paginated list has come: items handed out by earlier pages, and (for lists
/// without selectors) how many items the whole list has. Carried in the continue token, so
/// that no page has to count what follows it: each page costs its own size.
#[derive(Debug, Default, Clone, Copy)]
struct Progress {
    returned: u64,
    total: Option<u64>,
}

fn encode_continue(rv: i64, last: &ObjKey, progress: Progress) -> String {
    let mut token =
        json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}\u{0}", last.0, last.1)});
    token["returned"] = Value::from(progress.returned);
    if let Some(total) = progress.total {
        token["total"] = Value::from(total);
    }
    B64.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<Continue, ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = B64
        .decode(token)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("server does not recognize this encoded version"));
    }
    let rv = match v.get("rv").and_then(Value::as_i64) {
        Some(LATEST) => None,
        Some(r) if r > 0 => Some(r as u64),
        _ => {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
    };
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start key"))?;
    let start = start.trim_end_matches('\u{0}');
    let (ns, name) = start
        .split_once('/')
        .ok_or_else(|| bad("malformed start key"))?;
    let progress = Progress {
        returned: v.get("returned").and_then(Value::as_u64).unwrap_or(0),
        total: v.get("total").and_then(Value::as_u64),
    };
    Ok(Continue {
        rv,
        after: (ns.to_string(), name.to_string()),
        progress,
    })
}

fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))
}

/// Which data a list reads, and its resourceVersion.
/// Checks `resourceVersionMatch` against the other options, as the real server's
/// `ValidateListOptions` does (422 on `ListOptions.meta.k8s.io`).
fn validate_match(opts: &ListOptions) -> Result<(), ApiError> {
    let Some(m) = opts
        .resource_version_match
        .as_deref()
        .filter(|m| !m.is_empty())
    else {
        return Ok(());
    };
    let rv = opts.resource_version.as_deref().unwrap_or("");
    let mut errs = Vec::new();
    match m {
        "NotOlderThan" | "Exact" => {}
        other => errs.push(FieldError::not_supported(
            "resourceVersionMatch",
            &Value::from(other),
            &["Exact", "NotOlderThan", ""],
        )),
    }
    if rv.is_empty() {
        errs.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if opts
        .continue_token
        .as_deref()
        .is_some_and(|c| !c.is_empty())
    {
        errs.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided",
        ));
    }
    if m == "Exact" && rv == "0" {
        errs.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid_kind("ListOptions", "meta.k8s.io", "", &errs))
    }
}

/// The data a list reads, its resourceVersion, and where a continued list resumes.
type ListSource = (Data, u64, Option<(ObjKey, Progress)>);

fn list_source(st: &State, opts: &ListOptions) -> Result<ListSource, ApiError> {
    validate_match(opts)?;
    if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if opts
            .resource_version
            .as_deref()
            .is_some_and(|r| !r.is_empty() && r != "0")
        {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let c = decode_continue(token)?;
        let Some(rv) = c.rv else {
            // The rest at the latest resourceVersion; what earlier pages counted no longer
            // holds.
            let progress = Progress {
                returned: c.progress.returned,
                total: None,
            };
            return Ok((st.data.clone(), st.rv, Some((c.after, progress))));
        };
        let data = st.data_at(rv).ok_or_else(|| {
            let progress = Progress {
                returned: c.progress.returned,
                total: None,
            };
            ApiError::gone(INCONSISTENT_CONTINUE)
                .with_continue(encode_continue(LATEST, &c.after, progress))
        })?;
        return Ok((data, rv, Some((c.after, c.progress))));
    }
    let rv = opts.resource_version.as_deref().filter(|r| !r.is_empty());
    let exact = opts.resource_version_match.as_deref() == Some("Exact");
    match (rv, exact) {
        (None, _) | (Some("0"), false) => Ok((st.data.clone(), st.rv, None)),
        (Some(r), true) => {
            let want = parse_rv(r)?;
            if want > st.rv {
                return Err(too_large(want, st.rv));
            }
            let data = st.data_at(want).ok_or_else(|| {
                ApiError::gone("The resourceVersion for the provided list is too old.")
            })?;
            Ok((data, want, None))
        }
        (Some(r), false) => {
            let want = parse_rv(r)?;
            if want > st.rv {
                return Err(too_large(want, st.rv));
            }
            Ok((st.data.clone(), st.rv, None))
        }
    }
}

/// A resourceVersion from the future: the real server waits a few seconds, then answers this.
fn too_large(want: u64, current: u64) -> ApiError {
    ApiError::new(504, "Timeout", format!("Too large resource version: {want}, current: {current}"))
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}))
}

/// GET on a collection.
pub(crate) fn list(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    opts: &ListOptions,
) -> Result<Value, ApiError> {
    let sel = Selection::parse(
        res,
        namespace,
        opts.label_selector.as_deref(),
        opts.field_selector.as_deref(),
    )?;
    let (data, list_rv, after) = list_source(st, opts)?;
    let (after, progress) = match after {
        Some((key, progress)) => (Some(key), progress),
        None => (None, Progress::default()),
    };
    let limit = opts.limit.filter(|l| *l > 0);
    let rk = res_key(res);
    let api_version = res.api_version();
    let unselected = opts.label_selector.as_deref().is_none_or(str::is_empty)
        && opts.field_selector.as_deref().is_none_or(str::is_empty);
    let mut items = Vec::new();
    let mut last: Option<ObjKey> = None;
    let mut more = false;
    let mut total = progress.total;
    if let Some(objs) = data.get(&rk) {
        let lower = match (&after, &sel.namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.clone(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let upper = match &sel.namespace {
            Some(ns) => Bound::Excluded((format!("{ns}\u{0}"), String::new())),
            None => Bound::Unbounded,
        };
        for (key, obj) in objs.range((lower.clone(), upper.clone())) {
            if !sel.matches(obj) {
                continue;
            }
            if limit.is_some_and(|l| items.len() >= l) {
                // One more match is all a page needs to know: stop here.
                more = true;
                break;
            }
            items.push(to_version(obj, &api_version));
            last = Some(key.clone());
        }
        // The first page of an unselected list counts the whole list once (the map's length
        // when it spans every namespace); later pages read the count from the token.
        if more && unselected && total.is_none() {
            total = Some(match &sel.namespace {
                None => objs.len() as u64,
                Some(_) => objs.range((lower, upper)).count() as u64,
            });
        }
    }
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if more && let Some(last) = &last {
        // Later pages read the snapshot of this one (kept already, unless this page was
        // read at the latest resourceVersion).
        let snap_rv = st.snapshot_at(list_rv, &data);
        let returned = progress.returned + items.len() as u64;
        metadata["continue"] = Value::from(encode_continue(
            snap_rv as i64,
            last,
            Progress { returned, total },
        ));
        if let Some(total) = total {
            metadata["remainingItemCount"] = Value::from(total.saturating_sub(returned));
        }
    }
    Ok(json!({
        "apiVersion": api_version,
        "kind": res.list_kind,
        "metadata": metadata,
        "items": items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = encode_continue(42_i64, &("ns".into(), "a".into()), Progress::default());
        let c = decode_continue(&t).unwrap();
        assert_eq!(
            (c.rv, c.after),
            (Some(42), ("ns".to_string(), "a".to_string()))
        );
        let latest = decode_continue(&encode_continue(
            LATEST,
            &("ns".into(), "a".into()),
            Progress::default(),
        ));
        assert_eq!(latest.unwrap().rv, None);
        let zero = encode_continue(0, &("ns".into(), "a".into()), Progress::default());
        assert_eq!(decode_continue(&zero).unwrap_err().code, 400);
        assert_eq!(decode_continue("!!").unwrap_err().code, 400);
        let cluster = decode_continue(&encode_continue(
            7,
            &(String::new(), "n".into()),
            Progress::default(),
        ))
        .unwrap();
        assert_eq!(cluster.after, (String::new(), "n".to_string()));
    }
}
