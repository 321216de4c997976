// The items of a comma-separated list, as settings spell them ("summary,json=f", "a=dp,b=tp").
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

}  // namespace hycc
