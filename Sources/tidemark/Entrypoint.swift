/// The `tidemark` executable: parses the command line and runs the command.
@main
enum Entrypoint {
    static func main() async {
        await TidemarkCommand.runMain()
    }
}
