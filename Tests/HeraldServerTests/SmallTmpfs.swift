import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs mounted for one test, so the daemon's data folder can really run full.
///
/// Mounting needs root (CAP_SYS_ADMIN), as on CI; where it fails, `canMount` is false and
/// the tests that need it are skipped with that reason.
final class SmallTmpfs {
    /// Where it is mounted.
    let path: String
    private var filler: String { path + "/filler" }

    /// Whether this process may mount a tmpfs (tried once).
    static let canMount: Bool = {
        guard let probe = SmallTmpfs(bytes: 1 << 20) else { return false }
        _ = probe
        return true
    }()

    /// Mounts a tmpfs of `bytes` on a new temporary folder; nil when mounting fails.
    init?(bytes: Int = 2 << 20) {
        let path = NSTemporaryDirectory() + "heraldd-tmpfs-" + UUID().uuidString
        guard mkdir(path, 0o700) == 0 else { return nil }
        guard mount("tmpfs", path, "tmpfs", 0, "size=" + String(bytes)) == 0 else {
            rmdir(path)
            return nil
        }
        self.path = path
    }

    deinit {
        umount2(path, 2)  // MNT_DETACH: a daemon still holding files must not keep it mounted
        rmdir(path)
    }

    /// Writes a filler file until the file system refuses another byte.
    func fill() {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        for chunk in [65_536, 4_096, 1] {
            let bytes = [UInt8](repeating: 0x2e, count: chunk)
            while bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
        }
    }

    /// Fills the file system, then gives `bytes` back (rounded to whole pages by tmpfs).
    func fill(leaving bytes: Int) {
        fill()
        var status = stat()
        guard stat(filler, &status) == 0 else { return }
        truncate(filler, max(0, status.st_size - off_t(bytes)))
    }

    /// Deletes the filler: space returns.
    func free() { unlink(filler) }
}
