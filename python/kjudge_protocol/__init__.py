"""What both sides of the trust boundary use, and nothing either side owns: the job channel's
framing (wire) and shared device memory (transport), the inputs and their contract (inputs,
input_contract), the numerics flags (numerics), the timed loop both the reference and the
candidate are measured with (timing), problem-module loading (module_loader) and the node's
identity (node_identity). kjudge_harness (untrusted side, in the candidate's process) and
kjudge_worker (trusted) import this package, never each other (tests/python/client/test_package_boundary.py)."""
