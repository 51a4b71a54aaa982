//! `crt`'s integration tests, one module per area, in one test binary (one build and link for
//! all of them).

mod cluster;
mod demo;
mod durable;
mod module_cycles;
mod new;
mod serve;
mod watch;

/// Reads a starting `crt serve`'s output until it says where it wrote the kubeconfig (it
/// serves from then on): the lines so far, and the rest of its output. Panics with what it
/// printed if its output ends first.
fn until_serving(
    child: &mut std::process::Child,
) -> (
    Vec<String>,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("crt serve's output is piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    while let Some(Ok(line)) = lines.next() {
        let ready = line.starts_with("kubeconfig written to");
        seen.push(line);
        if ready {
            return (seen, lines);
        }
    }
    panic!("crt serve stopped before writing its kubeconfig: {seen:?}");
}
