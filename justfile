# hopscope recipes. `just` is a convenience: every recipe is one cargo
# command you can run without it (see README.md).

# List the recipes.
default:
    @just --list

# Run every test (the same command CI runs).
test:
    cargo test --workspace

# Clock source, the cost of a clock read and of a mark, counter support.
calibrate *ARGS:
    cargo run --release -- calibrate {{ARGS}}

# Decompose the write path into slices and write a report.
decompose *ARGS:
    cargo run --release -- decompose {{ARGS}}

# Import a CRDT changeset along the naive and the tuned merge path, step by step.
merge *ARGS:
    cargo run --release -- merge {{ARGS}}

# The example user program on the public harness: an inline baseline beside
# a tracing-instrumented writer, clean and probed (`just example --quick`).
example *ARGS:
    cargo run --release -p traced-writer --features hopscope -- {{ARGS}}

# The decomposition with published peers as lanes (tokio-rusqlite, async-sqlite, sqlx, deadpool).
peers *ARGS:
    cargo run --release --features peers -- decompose --peers {{ARGS}}

# Run lanes side by side and write a raw trace.
run *ARGS:
    cargo run --release -- run {{ARGS}}

# Re-analyze an existing trace.
analyze TRACE *ARGS:
    cargo run --release -- analyze {{TRACE}} {{ARGS}}

# Run a pre-registered A/B experiment, e.g. `just ab experiments/reply-persistent.toml`.
ab SPEC *ARGS:
    cargo run --release -- ab {{SPEC}} {{ARGS}}

# Measure the instrument's resolution by injecting known delays.
resolve *ARGS:
    cargo run --release -- resolve {{ARGS}}

# Sweep keep-warm modes, windows and placements.
keep-warm *ARGS:
    cargo run --release -- keep-warm {{ARGS}}

# Redraw charts and report.html from a run directory's result.json.
report DIR *ARGS:
    cargo run --release -- report {{DIR}} {{ARGS}}

# Time a mark next to rdtsc, quanta, Instant::now and a tracing span.
bench:
    cargo bench -p hopscope-probe --bench mark
    cargo bench -p hopscope-analyze --bench join
    cargo bench -p hopscope-workloads --bench library_cost

# Formatting and lints, as CI checks them.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
