import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Puts a new snapshot in place while keeping the one before it and the logs since that one.
///
/// The folder holds `snapshot` (the newest, generation N), `snapshot.previous` (the one
/// before, generation P) and `log.P` … `log.N`: if `snapshot` is ever found damaged,
/// `--repair` rebuilds exactly from `snapshot.previous` and those logs. Until the second
/// compaction there is no `snapshot.previous`, and `log.0` (replayed from the empty state)
/// plays its part. Order of a compaction, each step durable before the next:
/// 1. write `snapshot.tmp`, fsync, read it back and verify it whole (`writeVerified`);
/// 2. create the new, empty `log.N+1` (the writer's job);
/// 3. rename `snapshot` to `snapshot.previous`, then `snapshot.tmp` to `snapshot` (`promote`),
///    fsync the folder;
/// 4. delete logs older than `snapshot.previous` (`removeSuperseded`).
/// A crash between any two steps leaves a base and a complete chain of logs after it.
enum SnapshotRotation {
    /// Writes `bytes` to `snapshot.tmp`, fsynced, and checks what the file holds verifies.
    /// - Parameters:
    ///   - directory: the data folder.
    ///   - bytes: the snapshot (`SnapshotFile.encode`).
    /// - Returns: whether the file is written and verified; on false it is removed.
    static func writeVerified(_ directory: String, _ bytes: [UInt8]) -> Bool {
        let temporary = directory + "/" + StateDirectory.temporaryName
        guard PrivateFileMode.writeFile(temporary, bytes),
              let written = FileManager.default.contents(atPath: temporary),
              case .success = SnapshotFile.verify(Array(written)) else {
            let saved = errno
            unlink(temporary)
            errno = saved
            return false
        }
        return true
    }

    /// Makes the verified `snapshot.tmp` the current snapshot; the current one, if any and
    /// `keepPrevious`, becomes `snapshot.previous` (replacing the one before).
    ///
    /// `snapshot` names a whole, checked snapshot at every instant, so a kill at any point
    /// leaves one: the current snapshot gets its second name `snapshot.previous` first (a hard
    /// link), then `snapshot.tmp` replaces `snapshot` in one atomic rename. (Renaming
    /// `snapshot` away first left a window with only `snapshot.previous`: nothing was lost,
    /// but the kill -9 test caught the folder without a `snapshot`.)
    /// - Parameters:
    ///   - directory: the data folder.
    ///   - keepPrevious: false when `--repair` installs a rebuilt snapshot (it set aside the rest).
    /// - Returns: whether it worked; the caller fsyncs the folder to make it durable.
    static func promote(_ directory: String, keepPrevious: Bool = true) -> Bool {
        let current = directory + "/" + StateDirectory.snapshotName
        let previous = directory + "/" + StateDirectory.previousName
        if keepPrevious && access(current, F_OK) == 0 {
            if unlink(previous) != 0 && errno != ENOENT { return false }
            guard link(current, previous) == 0 else { return false }
        }
        return rename(directory + "/" + StateDirectory.temporaryName, current) == 0
    }

    /// Deletes the logs older than `snapshot.previous`: no base left needs them. Nothing when
    /// there is no verified `snapshot.previous` (then `log.0` is still the fallback).
    /// - Parameter directory: the data folder.
    static func removeSuperseded(_ directory: String) {
        guard let previous = SnapshotFile.generation(ofFile: directory + "/" + StateDirectory.previousName) else {
            return
        }
        let superseded = StateDirectory.logGenerations(directory).filter { $0 < previous }
        guard !superseded.isEmpty else { return }
        for generation in superseded { unlink(directory + "/" + StateDirectory.logName(generation)) }
        StateDirectory.syncDirectory(directory)
    }
}
