# SPDX-License-Identifier: MIT
# pytest set-up for the binding's tests: hypothesis' settings profile (no
# per-example deadline: the CI machine is shared and slow; a fixed example
# budget so the suite's time does not grow).
from hypothesis import settings

settings.register_profile("bloomkit", deadline=None, max_examples=100)
settings.load_profile("bloomkit")
