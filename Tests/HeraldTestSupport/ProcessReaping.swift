import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Kills a test daemon (SIGKILL) and waits for it to exit, at most `seconds`.
///
/// A bounded `waitpid` loop rather than `Process.waitUntilExit()`: that was seen to hang on
/// a test-pool thread when Foundation missed the exit, which would stall a whole test run.
public func killAndReap(_ process: Process, seconds: Double = 10) {
    guard process.isRunning else { return }
    let pid = process.processIdentifier
    kill(pid, SIGKILL)
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid || (reaped == -1 && errno == ECHILD) || !process.isRunning { return }
        usleep(2_000)
    }
}
