import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `damaged/<UTC time>/` in the data folder: where `--repair` sets aside every file it stops
/// using (a damaged snapshot, a log before it was cut, logs a rebuilt snapshot supersedes),
/// byte for byte, with `report.txt` saying what the repair did. The daemon never deletes it.
///
/// Why a folder per repair: two repairs never mix their files, and the name sorts by time.
struct DamagedFolder {
    /// The folder's path, created on first use.
    let path: String
    /// Whether it exists yet (something was set aside).
    private(set) var isCreated = false

    /// The folder for a repair starting now (created only when something is set aside).
    /// - Parameter dataDirectory: the data folder.
    init(dataDirectory: String) {
        let stamp = UTCTimestamp.format(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000))
        // `2026-12-01T03:38:07.123Z` → `20261201T033807.123Z`: no colons, sorts by time.
        path = dataDirectory + "/" + StateDirectory.damagedName + "/" + stamp.filter { $0 != "-" && $0 != ":" }
    }

    /// Moves a file of the data folder into the folder, keeping its name.
    /// - Parameter file: the file's path.
    /// - Throws: `PersistenceError` when it cannot be moved (the repair stops: nothing is lost).
    mutating func setAside(_ file: String) throws(PersistenceError) {
        try create()
        let name = file.split(separator: "/").last.map(String.init) ?? file
        guard rename(file, path + "/" + name) == 0 else { throw failure(file, "cannot move it to " + path) }
    }

    /// Copies a file into the folder (the log before `--repair` cuts it), fsynced, 0600.
    /// - Parameter file: the file's path.
    /// - Throws: `PersistenceError` when the copy cannot be made (then nothing is cut).
    mutating func copy(_ file: String) throws(PersistenceError) {
        try create()
        let name = file.split(separator: "/").last.map(String.init) ?? file
        let bytes = Array(FileManager.default.contents(atPath: file) ?? Data())
        guard PrivateFileMode.writeFile(path + "/" + name, bytes) else { throw failure(file, "cannot copy it to " + path) }
    }

    /// Writes `report.txt`: one line per note, then the lost channels, one per line.
    /// - Parameter lines: the report's lines.
    /// - Throws: `PersistenceError` when it cannot be written.
    mutating func writeReport(_ lines: [String]) throws(PersistenceError) {
        try create()
        let text = lines.joined(separator: "\n") + "\n"
        guard PrivateFileMode.writeFile(path + "/report.txt", Array(text.utf8)) else {
            throw failure(path + "/report.txt", "cannot write the repair report")
        }
        StateDirectory.syncDirectory(path)
    }

    /// Creates `damaged/` and this repair's folder, 0700 each, once.
    private mutating func create() throws(PersistenceError) {
        guard !isCreated else { return }
        let parent = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        for folder in [parent, path] {
            guard mkdir(folder, PrivateFileMode.folder) == 0 || errno == EEXIST,
                  chmod(folder, PrivateFileMode.folder) == 0 else { throw failure(folder, "cannot create the folder") }
        }
        StateDirectory.syncDirectory(parent)
        StateDirectory.syncDirectory(String(parent[..<(parent.lastIndex(of: "/") ?? parent.endIndex)]))
        isCreated = true
    }

    /// A `PersistenceError` naming the file, what failed and `errno`'s text.
    private func failure(_ file: String, _ what: String) -> PersistenceError {
        PersistenceError(file + ": " + what + " (" + String(cString: strerror(errno)) + ")")
    }
}
