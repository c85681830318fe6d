#if canImport(Glibc)
import Glibc
#endif
import HeraldFuzzHarness

/// libFuzzer's driver (in `libclang_rt.fuzzer`, linked by `-sanitize=fuzzer`).
///
/// Why call it from our own `main` rather than let libFuzzer's `main` run: SwiftPM links
/// every executable with its entry point renamed to `<module>_main`, so the executable must
/// define that; libFuzzer then parses the command line exactly as with its own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Runs one input through the harness and aborts on any violated invariant, so libFuzzer
/// saves the input as a crash.
///
/// - Parameters:
///   - bytes: the input.
///   - count: its length.
/// - Returns: 0, as libFuzzer requires.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count)
    let violations = FuzzHarness.run(input)
    if !violations.isEmpty {
        for violation in violations {
            var message = "herald-fuzz: " + violation + "\n"
            message.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        }
        abort()
    }
    return 0
}

/// The executable's entry: hands the command line to libFuzzer.
@main
enum HeraldFuzzMain {
    /// Starts libFuzzer with the process's arguments and exits with its status.
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { bytes, count in fuzzTestOneInput(bytes, count) })
    }
}
