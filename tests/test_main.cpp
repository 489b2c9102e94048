// The one doctest main; every tests/test_*.cpp file adds its cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
