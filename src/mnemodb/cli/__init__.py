"""The `mnemodb` command line."""

import os

# Before numpy loads OpenBLAS: its idle threads spin for about 2**28 cycles after each
# matrix product, and the vector search's product left them spinning while the next
# query was embedded on the same two cores. At 100,000 memories a hybrid search
# took 42-47 ms p50 / 131-139 ms p95 that way, and 33-34 / 45-47 ms with the threads
# sleeping after 2**4 cycles; the vector search itself kept its 6.5 ms.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
