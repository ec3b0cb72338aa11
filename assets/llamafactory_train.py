#!/usr/bin/env python3
"""LLaMA-Factory's training entry point for the DeepSpeed launcher (its repository's
src/train.py, which the pip package lacks), with arguments as command-line flags.

Usage (what components/launch_argv.py renders):
    deepspeed --hostfile H ... /opt/dslab/llamafactory_train.py --deepspeed ds_config.json
        --stage sft --do_train true --model_name_or_path DIR ...

The launcher prepends ``--local_rank=N``, which LLaMA-Factory's flag mode accepts (a YAML
file would have to be the first argument, so YAML mode cannot be used).

Before handing over, the process group is initialised with the accelerator's own backend
(gloo on CPU, nccl on CUDA). Left to itself, accelerate picks "mpi" on CPU whenever torch
is built with MPI, as Debian's is, and its gather then fails with "no support for
_allgather_base in MPI process group"; the Trainer's --ddp_backend is ignored with
--deepspeed.
"""

from __future__ import annotations


def main() -> None:
    import deepspeed
    from deepspeed.accelerator import get_accelerator

    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name())

    from llamafactory.train.tuner import run_exp

    run_exp()


if __name__ == "__main__":
    main()
