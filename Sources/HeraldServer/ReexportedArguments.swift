// `ArgumentScanner` and `ArgumentError` live in `HeraldArguments` so the `herald` CLI can
// share them without linking the daemon; re-exported so the daemon's files and tests keep
// using them without an extra import.
@_exported import HeraldArguments
