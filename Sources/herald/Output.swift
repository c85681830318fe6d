import Foundation

/// Line output, written unbuffered so pipes and tests see each line at once.
enum Output {
    private static let lock = NSLock()

    /// Writes `text` and a newline to standard output.
    static func line(_ text: String) {
        write(text + "\n", to: FileHandle.standardOutput)
    }

    /// Writes `text` and a newline to standard error.
    static func error(_ text: String) {
        write(text + "\n", to: FileHandle.standardError)
    }

    private static func write(_ text: String, to handle: FileHandle) {
        lock.lock()
        defer { lock.unlock() }
        handle.write(Data(text.utf8))
    }
}
