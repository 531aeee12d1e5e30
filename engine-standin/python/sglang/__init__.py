"""Not SGLang: the launch shim of the kvpool engine stand-in (see docs/engine-standin.md). Only
`python3 -m sglang.launch_server` is provided."""
