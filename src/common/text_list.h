// The items of a comma-separated list, as settings and specs spell them ("summary,json=f",
// "a=dp,b=tp", "bits=4, block=64"), and blanks around them.
#pragma once

#include <string_view>
#include <vector>

namespace hycc {

// The text between commas, in order, empty items included ("a,,b" -> "a", "", "b"; "" -> "").
inline std::vector<std::string_view> comma_items(std::string_view list) {
  std::vector<std::string_view> items;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    items.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return items;
}

// s without the blanks (spaces, tabs) at either end.
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace hycc
