"""What every tuner is (kvmtune.tuning.tuners.base): a profile's params
checked against the tuner's declared Params, each refusal one line."""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.tuners import cpu_pinning


def test_unknown_param_and_wrong_type_are_one_line_errors():
    with pytest.raises(InputError) as err:
        cpu_pinning.CpuPinning.parse_params({'polcy': 'dedicated'}, 'p.yaml')
    assert err.value.line() == (
        "p.yaml: cpu_pinning.params: unknown parameter 'polcy' (fix: known "
        "parameters: policy, thread_policy, emulator_threads_policy, "
        "dedicated_mask, isolcpus)")
    with pytest.raises(InputError) as err:
        cpu_pinning.CpuPinning.parse_params({'isolcpus': 'yes'}, 'p.yaml')
    assert 'expected true or false' in err.value.line()
    with pytest.raises(InputError) as err:
        cpu_pinning.CpuPinning.parse_params({'policy': 'pinned'}, 'p.yaml')
    assert err.value.key == 'cpu_pinning.params.policy'
    assert 'dedicated, shared, mixed' in err.value.line()
