"""kjudge-bench: judge a KernelBench-style generations folder through the queue and report
KernelBench's numbers (and more). Entry point: kjudge.bench.cli:main (`kjudge-bench`,
`python -m kjudge.bench`)."""
