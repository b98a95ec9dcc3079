// The command line of this run, recorded in every JSON result it writes.
#include <cctype>
#include <string>

#include "commands.h"
#include "placer/graphs/json_writer.h"

namespace placer::cli {
namespace {

std::string& recorded() {
  static std::string command = "placer";
  return command;
}

// A word as a POSIX shell reads it back: as is when it holds nothing the shell treats specially, else in
// single quotes (a quote inside as '\'').
std::string shell_word(const std::string& word) {
  bool plain = !word.empty();
  for (char c : word)
    plain = plain &&
            (std::isalnum(static_cast<unsigned char>(c)) || std::string("@%+=:,./_-").find(c) != std::string::npos);
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void record_invocation(int argc, char** argv) {
  std::string command = "placer";
  for (int i = 1; i < argc; ++i) command += " " + shell_word(argv[i]);
  recorded() = command;
}

const std::string& invocation() { return recorded(); }

std::string with_invocation(const std::string& json) {
  const size_t open = json.find('{');
  if (open == std::string::npos) return json;
  return json.substr(0, open + 1) + "\n\"command\": " + json_quote(invocation()) +
         ", \"placer\": " + json_quote(PLACER_VERSION) + "," + json.substr(open + 1);
}

}  // namespace placer::cli
