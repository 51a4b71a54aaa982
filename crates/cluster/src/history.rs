//! ControllerRevisions, as upstream's controller history keeps them for StatefulSets and
//! DaemonSets: each distinct pod template of an owner is one revision (`<owner>-<hash>`,
//! controlled by the owner, labelled with the template's labels and
//! `controller.kubernetes.io/hash`), numbered in the order it last became the update
//! revision. The data is the owner's strategic merge patch that restores the template
//! (`{"spec": {"template": {..., "$patch": "replace"}}}`); the hash is FNV-32 of that data
//! and the owner's collision count, in upstream's safe alphabet.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::{Actor, Api};
use crate::obj;

/// The label carrying a revision's hash.
pub(crate) const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The revision data of an owner's current template.
pub(crate) fn data_of(owner: &Value) -> Value {
    let mut template = owner
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    template["$patch"] = json!("replace");
    json!({"spec": {"template": template}})
}

/// The template a revision's data restores.
pub(crate) fn template_of(revision: &Value) -> Value {
    let mut template = revision
        .pointer("/data/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(t) = template.as_object_mut() {
        t.remove("$patch");
    }
    template
}

/// `HashControllerRevision`: FNV-32 (not 32a) of the data and the collision count, its
/// decimal digits mapped to the safe alphabet.
pub(crate) fn hash(data: &Value, collisions: i64) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let feed = |h: &mut u32, bytes: &[u8]| {
        for b in bytes {
            *h = h.wrapping_mul(0x0100_0193);
            *h ^= u32::from(*b);
        }
    };
    feed(&mut h, data.to_string().as_bytes());
    feed(&mut h, collisions.to_string().as_bytes());
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHABET[b as usize % ALPHABET.len()] as char)
        .collect()
}

/// The revision number of a ControllerRevision.
pub(crate) fn number(revision: &Value) -> i64 {
    obj::i64_at(revision, "/revision").unwrap_or(0)
}

/// The owner's ControllerRevisions, oldest revision first.
pub(crate) fn list(api: &Api, owner: &Value) -> Vec<Value> {
    let mut revisions: Vec<Value> = api
        .owned_shared(&api.res.controllerrevisions, obj::uid(owner))
        .into_iter()
        .filter(|r| obj::controlled_by(r, owner))
        .map(|r| (*r).clone())
        .collect();
    revisions.sort_by_key(|r| (number(r), obj::name(r).to_string()));
    revisions
}

/// The update revision of `owner` among `revisions` (sorted): the last one when its data is
/// the template's; an older equal one renumbered past the last (a roll back); otherwise a
/// new one. `collisions` is the owner's collision count, raised when a name is taken by a
/// different revision.
pub(crate) fn update_revision(
    api: &Api,
    who: &Actor,
    owner: &Value,
    revisions: &[Value],
    collisions: &mut i64,
) -> Result<Value, crt_apiserver::ApiError> {
    let data = data_of(owner);
    let next = revisions.last().map(number).unwrap_or(0) + 1;
    if let Some(last) = revisions.last()
        && last.get("data") == Some(&data)
    {
        return Ok(last.clone());
    }
    let ns = Some(obj::namespace(owner));
    if let Some(equal) = revisions
        .iter()
        .rev()
        .find(|r| r.get("data") == Some(&data))
    {
        let mut renumbered = equal.clone();
        renumbered["revision"] = json!(next);
        return api.update(&api.res.controllerrevisions, ns, None, renumbered, who);
    }
    loop {
        let hash = hash(&data, *collisions);
        let mut labels = obj::string_map(owner, "/spec/template/metadata/labels");
        labels.insert(HASH_LABEL.into(), hash.clone());
        let body = json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {
                "name": format!("{}-{hash}", obj::name(owner)),
                "labels": labels,
                "ownerReferences": [obj::controller_ref(owner)],
            },
            "data": data,
            "revision": next,
        });
        match api.create(&api.res.controllerrevisions, ns, body.clone(), who) {
            Err(e) if e.code == 409 => {
                let name = obj::name(&body);
                if let Some(existing) = api.get(&api.res.controllerrevisions, ns, name)
                    && obj::controlled_by(&existing, owner)
                    && existing.get("data") == Some(&data)
                {
                    return Ok(existing);
                }
                *collisions += 1;
            }
            other => return other,
        }
    }
}

/// Deletes the oldest revisions no pod uses (`live` names those kept) past `limit`.
pub(crate) fn truncate(
    api: &Api,
    who: &Actor,
    revisions: &[Value],
    live: &BTreeSet<String>,
    limit: i64,
) {
    let history: Vec<&Value> = revisions
        .iter()
        .filter(|r| !live.contains(obj::name(r)))
        .collect();
    let extra = history.len().saturating_sub(limit.max(0) as usize);
    for r in history.into_iter().take(extra) {
        if let Err(e) = api.delete(
            &api.res.controllerrevisions,
            Some(obj::namespace(r)),
            obj::name(r),
            None,
            Some(obj::uid(r)),
            who,
        ) {
            tracing::debug!("deleting revision {}: {e}", obj::name(r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_depends_on_data_and_collisions() {
        let d = data_of(&json!({"spec": {"template": {"spec": {"containers": []}}}}));
        assert_eq!(d["spec"]["template"]["$patch"], "replace");
        let h = hash(&d, 0);
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        assert_eq!(h, hash(&d, 0));
        assert_ne!(h, hash(&d, 1));
        let r = json!({"data": d});
        assert_eq!(template_of(&r), json!({"spec": {"containers": []}}));
    }
}
