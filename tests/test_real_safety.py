"""The real-device backend never creates or writes files on kernel pseudo file systems (a
mistyped /dev/sdz must not become a RAM-backed file measured as a device)."""
from __future__ import annotations

import os

import pytest

from hss_gym.backends import real

needs_mountinfo = pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"),
                                     reason="no /proc/self/mountinfo (not Linux)")


@needs_mountinfo
@pytest.mark.parametrize("allow", [False, True])
def test_mistyped_block_device_is_refused(allow: bool) -> None:
    path = "/dev/sdz-hss-gym-test"
    with pytest.raises(real.UnsafeDeviceError, match=r"does not exist.*/dev.*mistyped"):
        real.check_path(path, allow_block_device=allow, overwrite=True, force=True)
    assert not os.path.exists(path)


@needs_mountinfo
@pytest.mark.parametrize("path", ["/proc/hss-gym-test.img", "/sys/hss-gym-test.img",
                                  "/sys/kernel/hss-gym-test.img", "/proc/self/comm"])
def test_proc_and_sys_are_refused(path: str) -> None:
    with pytest.raises(real.UnsafeDeviceError, match="pseudo file system"):
        real.check_path(path, allow_block_device=True, overwrite=True, force=True)


@needs_mountinfo
def test_mount_table_lookup(tmp_path) -> None:
    assert real.mount_of("/proc/self") == ("/proc", "proc")
    mnt, fstype = real.mount_of(str(tmp_path))
    assert str(tmp_path).startswith(mnt) and fstype not in real.PSEUDO_FS
    assert real.pseudo_fs_problem(str(tmp_path / "fast.img")) is None
    real.check_path(str(tmp_path / "fast.img"))  # a new file on a real file system is fine
    if os.path.isdir("/dev/shm") and real.mount_of("/dev/shm")[0] == "/dev/shm":
        assert real.pseudo_fs_problem("/dev/shm/hss-gym-test.img") is None  # tmpfs inside /dev


@needs_mountinfo
def test_backend_refuses_before_creating_anything() -> None:
    why = real.unavailable_reason()
    if why is not None and "not built" in why:
        pytest.skip(why)
    path = "/dev/sdz-hss-gym-test"
    with pytest.raises(real.UnsafeDeviceError, match="mistyped"):
        real.RealBackend([path], [1 << 16], engine="psync", allow_block_device=True)
    assert not os.path.exists(path)


def test_a_dangling_symlink_says_so(tmp_path) -> None:
    """A device path that is a symbolic link to nothing is refused saying so, not with the
    "File exists" of the exclusive create that would follow it; nothing is created."""
    link = tmp_path / "fast.img"
    link.symlink_to(tmp_path / "gone" / "target.img")
    with pytest.raises(real.UnsafeDeviceError, match=rf"{link} is a dangling symbolic link \(to "
                                                     rf"{tmp_path}/gone/target.img, which does not exist\)"):
        real.check_path(str(link))
    why = real.unavailable_reason()
    if why is None or "not built" not in why:
        with pytest.raises(real.UnsafeDeviceError, match="dangling symbolic link"):
            real.RealBackend([str(link)], [1 << 16], engine="psync")
    assert link.is_symlink() and not (tmp_path / "gone").exists()
