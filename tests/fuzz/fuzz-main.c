// A plain driver for the libFuzzer targets, for builds without libFuzzer (and to replay a crash
// with gdb): runs LLVMFuzzerTestOneInput once on every file named, and on every file in every
// directory named. The test suite runs it over the corpus so that the target keeps building.

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

// 0 after running the target on the file at path, 1 if it could not be read
static int fuzz_main_file(const char * path) {
    FILE * f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        if (f) {
            fclose(f);
        }
        return 1;
    }
    const long size = ftell(f);
    uint8_t *  data = malloc(size > 0 ? (size_t) size : 1);
    rewind(f);
    const int bad = size < 0 || data == NULL || fread(data, 1, (size_t) size, f) != (size_t) size;
    fclose(f);
    if (!bad) {
        printf("%s\n", path);
        fflush(stdout); // the last name printed is the input that crashed
        LLVMFuzzerTestOneInput(data, (size_t) size);
    }
    free(data);
    return bad;
}

int main(int argc, char ** argv) {
    int failed = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        DIR * d = opendir(argv[i]);
        if (d == NULL) {
            failed += fuzz_main_file(argv[i]);
            n++;
            continue;
        }
        for (struct dirent * de; (de = readdir(d)) != NULL;) {
            char        path[4096];
            struct stat st;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            if (de->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                failed += fuzz_main_file(path);
                n++;
            }
        }
        closedir(d);
    }
    printf("%d inputs, %d unreadable\n", n, failed);
    return failed != 0 || n == 0;
}
