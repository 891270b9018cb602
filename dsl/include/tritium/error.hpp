// The one exception type tritium throws for anything a user can get wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace tritium {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace tritium
