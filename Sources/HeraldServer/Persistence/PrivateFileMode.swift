#if canImport(Glibc)
import Glibc
#endif

/// The modes of the data folder (0700) and of every file the daemon makes in it (0600),
/// whatever the umask the daemon was started with.
///
/// Why explicit: the state log and snapshots hold every retained value, and the umask is the
/// parent's choice (0000 under some supervisors and containers), so `open(…, 0644)` or
/// `mkdir` alone can leave them readable, or writable, by every local user. Each folder and
/// file gets its mode set with `chmod`/`fchmod` after it is created; `fchmod` on a file that
/// already existed also tightens what an older version left behind.
enum PrivateFileMode {
    /// The data folder and any missing parent the daemon creates for it.
    static let folder: mode_t = 0o700
    /// The lock, the logs, the snapshot and its temporary file.
    static let file: mode_t = 0o600

    /// Creates `path` (and missing parents) with mode 0700, or tightens an existing folder
    /// that others may read, write or enter.
    /// - Parameter path: the data folder (`data_dir`).
    /// - Returns: warnings for the log: a folder found with a wider mode, tightened or not.
    /// - Throws: `PersistenceError` naming the folder when it cannot be created or is not a folder.
    static func prepareFolder(_ path: String) throws(PersistenceError) -> [String] {
        var info = stat()
        guard stat(path, &info) == 0 else {
            guard errno == ENOENT else { throw failure(path, "cannot use the folder") }
            try createFolders(path)
            return []
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw PersistenceError("data_dir " + path + ": exists and is not a folder")
        }
        let found = info.st_mode & 0o7777
        guard found & 0o077 != 0 else { return [] }
        let was = OctalMode.text(Int(found))
        guard chmod(path, folder) == 0 else {
            return ["data_dir " + path + " has mode " + was + " (others can reach the state files) and cannot be"
                + " tightened to 0700: " + String(cString: strerror(errno))]
        }
        return ["data_dir " + path + " had mode " + was + "; tightened to 0700"]
    }

    /// Opens (creating if needed) a file in the data folder and sets its mode to 0600.
    /// - Parameters:
    ///   - path: the file.
    ///   - flags: `open(2)` flags; `O_CREAT` is added.
    /// - Returns: the descriptor, or -1 with `errno` set (also when the mode cannot be set).
    static func open(_ path: String, flags: Int32) -> Int32 {
        let descriptor = Glibc.open(path, flags | O_CREAT, file)
        guard descriptor >= 0 else { return -1 }
        guard fchmod(descriptor, file) == 0 else {
            let saved = errno
            close(descriptor)
            errno = saved
            return -1
        }
        return descriptor
    }

    /// Creates (or replaces the content of) `file`, mode 0600, with `bytes`, fsynced.
    /// - Returns: whether every byte was written and synced.
    static func writeFile(_ file: String, _ bytes: [UInt8]) -> Bool {
        let descriptor = open(file, flags: O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { return false }
            offset += result
        }
        return fsync(descriptor) == 0
    }

    /// Sets an existing file's mode to 0600 if it is wider; a missing file is fine.
    /// - Parameter path: a file in the data folder (the snapshot, which is never reopened).
    static func tighten(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 != 0 else { return }
        _ = chmod(path, file)
    }

    /// `mkdir` each missing component of `path`, each then `chmod` 0700 (mkdir's mode is
    /// filtered through the umask, so it is only an upper bound).
    private static func createFolders(_ path: String) throws(PersistenceError) {
        let absolute = path.hasPrefix("/")
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix = prefix.isEmpty && !absolute ? String(component) : prefix + "/" + component
            if mkdir(prefix, folder) == 0 {
                guard chmod(prefix, folder) == 0 else { throw failure(prefix, "cannot set the folder's mode") }
            } else if errno != EEXIST {
                throw failure(prefix, "cannot create the folder")
            }
        }
    }

    private static func failure(_ path: String, _ what: String) -> PersistenceError {
        PersistenceError("data_dir " + path + ": " + what + " (" + String(cString: strerror(errno)) + ")")
    }
}
