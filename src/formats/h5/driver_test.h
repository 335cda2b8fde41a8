/*
 * For tests only, not the library's interface: a hook into dsview's
 * read-only HDF5 driver (driver.c). Nothing outside tests/ includes this.
 */
#ifndef DSV_H5_DRIVER_TEST_H
#define DSV_H5_DRIVER_TEST_H

/* Called with the file name just before the driver opens a file (a test
 * swaps the file there). NULL (the default) does nothing. Set it only
 * while no other thread opens an HDF5 file. */
extern void (*dsv_h5_ro_open_hook)(const char *name);

#endif
