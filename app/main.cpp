// attn: a command-line explorer of Transformer attention. Subcommands live in
// app/cmd_*.cpp; this file only hands argv to the CLI.
#include "command.hpp"

int main(int argc, char** argv) { return attn::cli::run_cli(argc, argv); }
